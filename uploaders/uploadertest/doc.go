// Package uploadertest is the conformance suite for spi.Uploader
// implementations, Egret's built-in ones and third parties' alike.
//
//	func TestConformance(t *testing.T) {
//		uploadertest.Run(t, func(t *testing.T) spi.Uploader {
//			u, err := myuploader.New(spi.Config{...}, zaptest.NewLogger(t))
//			if err != nil {
//				t.Fatal(err)
//			}
//			return u
//		})
//	}
//
// The suite builds real packages with fetch.CreateTarGz, uploads them and
// fetches them back through package fetch (so the returned URIs must use a
// scheme fetch supports: file, http or https), then checks bytes, digests,
// extraction, Undo, errors, concurrency and cancellation. It closes every
// uploader it creates; the factory must not. Use Suite to pass fetch options
// such as a bearer token.
//
// The checks take a spitest.T, so they also run outside go test: set
// Suite.Open (a context-and-error factory) instead of Suite.New and call
// Suite.Run with a spitest.Reporter's T, as `egret plugin verify` does.
package uploadertest
