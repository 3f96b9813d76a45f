package main

import core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

func nodeOf(id string) *core.Node { return &core.Node{Id: id, Cluster: "bench"} }
