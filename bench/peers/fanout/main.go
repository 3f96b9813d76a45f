// The fan-out client of `npm run bench -- peers`: N simulated Envoys, each with its own HTTP/2
// connection and one SotW ADS stream, subscribing as Envoy does (CDS and LDS wildcard, EDS for
// every cluster of the first CDS response, RDS by name) and ACKing every response by nonce.
// The same client drives every server in a run, so their figures differ only by the server.
//
// Commands on stdin, one JSON object per line; events on stdout, one JSON object per line:
//
//	{"cmd":"watch","type":URL}  -> {"event":"watching"}, then {"event":"got","at":[ms...],"bytes":[...]}
//	                               once every stream received a response of that type
//	{"cmd":"storm"}             -> every stream reconnects at once; {"event":"got",...} once each
//	                               stream holds clusters, endpoints, listeners and routes again
//	{"cmd":"exit"}
//
// Times are Unix milliseconds, so the harness subtracts its own start of the change.
// Benchmark harness only: the product is TypeScript.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

const (
	cdsURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	edsURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	ldsURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
	rdsURL = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

type stream struct {
	id     int
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	// Set by the stream's goroutine, read by the reporter once every stream is done.
	gotAt atomic.Int64
	bytes atomic.Int64
	seen  atomic.Uint32 // bit per type seen since the last reset (storm)
}

var (
	target    = flag.String("target", "", "host:port of the server")
	count     = flag.Int("n", 100, "streams")
	routeName = flag.String("route", "edge-0", "RouteConfiguration to subscribe to")

	mu        sync.Mutex
	watchType string // "" when not watching; "*" during a storm
	pending   atomic.Int64
	out       = json.NewEncoder(os.Stdout)
	outMu     sync.Mutex
	streams   []*stream
	readyLeft atomic.Int64
)

func emit(v any) {
	outMu.Lock()
	defer outMu.Unlock()
	if err := out.Encode(v); err != nil {
		log.Fatal(err)
	}
}

func bit(typeURL string) uint32 {
	switch typeURL {
	case cdsURL:
		return 1
	case edsURL:
		return 2
	case ldsURL:
		return 4
	case rdsURL:
		return 8
	}
	return 0
}

func (s *stream) run(node string) {
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := grpc.NewClient(*target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.WaitForReady(true)))
	if err != nil {
		log.Fatal(err)
	}
	s.conn, s.cancel = conn, cancel
	ready := false
	// As Envoy does: a stream that fails (a refused connection during a storm) is opened again.
	for ctx.Err() == nil {
		s.session(ctx, conn, node, &ready)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// session runs one ADS stream until it fails.
func (s *stream) session(ctx context.Context, conn *grpc.ClientConn, node string, ready *bool) {
	call, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return
	}
	names := map[string][]string{rdsURL: {*routeName}}
	var got uint32 // bit per type received on this stream
	send := func(r *discovery.DiscoveryRequest) { _ = call.Send(r) }
	send(&discovery.DiscoveryRequest{Node: nodeOf(node), TypeUrl: cdsURL})
	send(&discovery.DiscoveryRequest{TypeUrl: ldsURL})
	send(&discovery.DiscoveryRequest{TypeUrl: rdsURL, ResourceNames: names[rdsURL]})
	for {
		resp, err := call.Recv()
		if err != nil {
			return
		}
		s.bytes.Add(int64(proto.Size(resp)))
		t := resp.TypeUrl
		send(&discovery.DiscoveryRequest{TypeUrl: t, VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce,
			ResourceNames: names[t]})
		if t == cdsURL && names[edsURL] == nil {
			eds := make([]string, 0, len(resp.Resources))
			for _, a := range resp.Resources {
				var c cluster.Cluster
				if a.UnmarshalTo(&c) == nil {
					eds = append(eds, c.Name)
				}
			}
			names[edsURL] = eds
			send(&discovery.DiscoveryRequest{TypeUrl: edsURL, ResourceNames: eds})
		}
		// Ready once the stream holds all four types: a stream that had its routes but not yet its
		// endpoints would still be subscribing (EDS for every cluster) while a change is measured.
		if got |= bit(t); got == 15 && !*ready {
			*ready = true
			if readyLeft.Add(-1) == 0 {
				emit(map[string]any{"event": "ready"})
			}
		}
		s.observe(t)
	}
}

// observe notes a response of type t against what the harness waits for.
func (s *stream) observe(t string) {
	mu.Lock()
	w := watchType
	mu.Unlock()
	if w == "" || s.gotAt.Load() != 0 {
		return
	}
	if w == "*" {
		if s.seen.Or(bit(t))|bit(t) != 15 {
			return
		}
	} else if t != w {
		return
	}
	if s.gotAt.CompareAndSwap(0, time.Now().UnixMilli()) && pending.Add(-1) == 0 {
		report()
	}
}

func report() {
	at := make([]int64, len(streams))
	bytes := make([]int64, len(streams))
	for i, s := range streams {
		at[i], bytes[i] = s.gotAt.Load(), s.bytes.Load()
	}
	mu.Lock()
	watchType = ""
	mu.Unlock()
	emit(map[string]any{"event": "got", "at": at, "bytes": bytes})
}

func reset(w string) {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range streams {
		s.gotAt.Store(0)
		s.bytes.Store(0)
		s.seen.Store(0)
	}
	pending.Store(int64(len(streams)))
	watchType = w
}

func main() {
	flag.Parse()
	streams = make([]*stream, *count)
	readyLeft.Store(int64(*count))
	start := func(i int) { go streams[i].run(fmt.Sprintf("peer-%d", i)) }
	for i := range streams {
		streams[i] = &stream{id: i}
		start(i)
		if i%100 == 99 {
			time.Sleep(20 * time.Millisecond) // do not flood the listen backlog
		}
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var c struct{ Cmd, Type string }
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			log.Fatal(err)
		}
		switch c.Cmd {
		case "watch":
			reset(c.Type)
			emit(map[string]any{"event": "watching"})
		case "storm":
			for _, s := range streams {
				s.cancel()
				_ = s.conn.Close()
			}
			reset("*")
			readyLeft.Store(1 << 40) // no "ready" event during a storm
			for i := range streams {
				start(i)
			}
		case "exit":
			if n := pending.Load(); n > 0 && watchType != "" {
				log.Printf("exit while %d streams still wait for %s", n, watchType)
			}
			os.Exit(0)
		}
	}
}
