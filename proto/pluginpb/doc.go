// Package pluginpb holds the gRPC services of Egret's plugin protocol
// (protocol version 1): StateManager, Uploader, Packing and Scheduler, one
// per SPI kind, with the messages they exchange. The .proto files next to
// the generated code are the contract a plugin in another language would
// implement; Go plugins use package plugins instead of these types.
//
// Regenerate from the module root with
//
//	protoc --go_out=. --go_opt=module=github.com/egret-stream/egret \
//	  --go-grpc_out=. --go-grpc_opt=module=github.com/egret-stream/egret \
//	  proto/pluginpb/*.proto
package pluginpb
