// A gRPC-Go xDS client (and, with -serve, a backend) for fleetxds's end-to-end tests: it reads the bootstrap named by
// GRPC_XDS_BOOTSTRAP (as every gRPC-Go application does), dials the xds:/// target given and calls
// /helloworld.Greeter/SayHello (JSON payloads, as the tests' backends speak) until one succeeds or
// the deadline passes. It prints one line: "ok <backend>" or "error <code> <message>". With -hold it
// then keeps calling (the process, its xDS stream and its certificates stay) and prints
// "held <ok> <failed>" at the end. With -spread N it then sends N more RPCs, -concurrency at a
// time, and prints "spread <backend>=<count> ..." (in name order).
//
// With -serve ADDRESS it is instead a plain backend answering every method with {"backend": NAME},
// reporting with each response the load -cpu and 100 requests per second (ORCA, as weighted round
// robin reads it); it prints "listening <port>" and serves until killed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/status"
	_ "google.golang.org/grpc/xds" // the xds:/// resolver and balancers
)

// rawCodec sends and receives message bytes as they are (the tests' backends speak JSON).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

var _ encoding.Codec = rawCodec{}

func main() {
	target := flag.String("target", "", "xds:///host:port")
	wait := flag.Duration("wait", 20*time.Second, "how long to keep trying")
	hold := flag.Duration("hold", 0, "how long to keep calling after the first success")
	spread := flag.Int("spread", 0, "RPCs to send after the first success, counted per backend")
	concurrency := flag.Int("concurrency", 8, "RPCs in flight at a time for -spread")
	serveOn := flag.String("serve", "", "serve as a backend on this address instead")
	name := flag.String("name", "go", "the backend's name (-serve)")
	cpu := flag.Float64("cpu", 0.5, "the CPU utilization the backend reports (-serve)")
	flag.Parse()
	if *serveOn != "" {
		serve(*serveOn, *name, *cpu)
		return
	}
	conn, err := grpc.NewClient(*target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Printf("error dial %v\n", err)
		os.Exit(1)
	}
	defer conn.Close()
	call := func() ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req := []byte(`{"name":"grpc-go"}`)
		var resp []byte
		err := conn.Invoke(ctx, "/helloworld.Greeter/SayHello", &req, &resp, grpc.ForceCodec(rawCodec{}))
		return resp, err
	}
	deadline := time.Now().Add(*wait)
	var last error
	for time.Now().Before(deadline) {
		var resp []byte
		resp, last = call()
		if last == nil {
			var body struct {
				Backend string `json:"backend"`
			}
			_ = json.Unmarshal(resp, &body)
			fmt.Printf("ok %s\n", body.Backend)
			ok, failed := 0, 0
			for end := time.Now().Add(*hold); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				if _, err := call(); err == nil {
					ok++
				} else {
					failed++
				}
			}
			if *hold > 0 {
				fmt.Printf("held %d %d\n", ok, failed)
			}
			if *spread > 0 {
				fmt.Println(spreadOver(call, *spread, *concurrency))
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	s, _ := status.FromError(last)
	fmt.Printf("error %s %s\n", s.Code(), s.Message())
	os.Exit(1)
}

// spreadOver sends n RPCs, c at a time, and says how many each backend answered.
func spreadOver(call func() ([]byte, error), n, c int) string {
	var mu sync.Mutex
	counts := map[string]int{}
	jobs := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				resp, err := call()
				key := "error"
				if err == nil {
					var body struct {
						Backend string `json:"backend"`
					}
					_ = json.Unmarshal(resp, &body)
					key = body.Backend
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := []string{"spread"}
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	return strings.Join(parts, " ")
}

// serve answers every method with the backend's name and reports its load with each response.
func serve(address, name string, cpu float64) {
	lis, err := net.Listen("tcp", address)
	if err != nil {
		fmt.Printf("error listen %v\n", err)
		os.Exit(1)
	}
	answer := []byte(fmt.Sprintf(`{"message":"hello","backend":%q}`, name))
	s := grpc.NewServer(
		orca.CallMetricsServerOption(nil),
		grpc.ForceServerCodec(rawCodec{}),
		grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			var req []byte
			if err := stream.RecvMsg(&req); err != nil {
				return err
			}
			rec := orca.CallMetricsRecorderFromContext(stream.Context())
			rec.SetCPUUtilization(cpu)
			rec.SetQPS(100)
			return stream.SendMsg(&answer)
		}),
	)
	fmt.Printf("listening %d\n", lis.Addr().(*net.TCPAddr).Port)
	_ = s.Serve(lis)
}
