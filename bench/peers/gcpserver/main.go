// A go-control-plane ADS server for side-by-side benchmarks (npm run bench -- peers): it serves
// the resources `fleetxds render` printed for one node group, each type with its own version
// (the content hash fleetxds gives it), to every node. SIGHUP reloads the file and publishes a
// new snapshot: SIGUSR1 loads the file and builds the snapshot, SIGHUP then sets it, so the
// benchmark times the push alone. Benchmark harness only: the product is TypeScript.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	// Types the rendered resources carry inside Any fields.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// oneGroup puts every node in the same snapshot, as one fleetxds node group does.
type oneGroup struct{}

func (oneGroup) ID(*core.Node) string { return "all" }

type rendered struct {
	VersionInfo string            `json:"version_info"`
	TypeURL     string            `json:"type_url"`
	Resources   []json.RawMessage `json:"resources"`
}

func load(path, group string) (*cache.Snapshot, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var groups map[string]map[string]rendered
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, err
	}
	g, ok := groups[group]
	if !ok {
		return nil, fmt.Errorf("no group %q in %s", group, path)
	}
	snap := &cache.Snapshot{}
	for kind, r := range g {
		if kind == "secret" {
			continue
		}
		items := make([]types.Resource, 0, len(r.Resources))
		for _, js := range r.Resources {
			var a anypb.Any
			if err := protojson.Unmarshal(js, &a); err != nil {
				return nil, fmt.Errorf("%s: %w", kind, err)
			}
			m, err := a.UnmarshalNew()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", kind, err)
			}
			items = append(items, m.(types.Resource))
		}
		snap.Resources[cache.GetResponseType(r.TypeURL)] = cache.NewResources(r.VersionInfo, items)
	}
	return snap, snap.Consistent()
}

func main() {
	port := flag.Int("port", 0, "port to listen on (0: any)")
	file := flag.String("resources", "", "output of `fleetxds render`")
	group := flag.String("group", "default", "node group to serve")
	flag.Parse()

	ctx := context.Background()
	snapshots := cache.NewSnapshotCache(true, oneGroup{}, nil)
	prepared, err := load(*file, *group)
	if err != nil {
		log.Fatal(err)
	}
	if err := snapshots.SetSnapshot(ctx, "all", prepared); err != nil {
		log.Fatal(err)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGUSR1)
	go func() {
		for sig := range signals {
			if sig == syscall.SIGUSR1 {
				if prepared, err = load(*file, *group); err != nil {
					log.Fatal(err)
				}
				fmt.Println(`{"event":"prepared"}`)
				continue
			}
			if err := snapshots.SetSnapshot(ctx, "all", prepared); err != nil {
				log.Fatal(err)
			}
			fmt.Println(`{"event":"published"}`)
		}
	}()

	srv := server.NewServer(ctx, snapshots, nil)
	// As go-control-plane's example server does: no limit on streams per connection.
	g := grpc.NewServer(grpc.MaxConcurrentStreams(1_000_000))
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, srv)
	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("{\"event\":\"listening\",\"port\":%d}\n", lis.Addr().(*net.TCPAddr).Port)
	log.Fatal(g.Serve(lis))
}
