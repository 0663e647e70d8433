package http

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the http uploader reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: KeyURI, Type: spi.KeyString, Required: true, Check: spi.CheckHTTPURL,
		Doc: "Base URL of the package server: the package is sent with HTTP PUT to <uri><name>; the download URI is the server's Location header, else that URL (egret serve-packages serves http://<host>:7780/packages/)."},
	{Name: KeyToken, Type: spi.KeyString, Default: "",
		Doc: "Bearer token sent with uploads; empty: none. ${EGRET_UPLOAD_TOKEN:-} reads it from the environment."},
	{Name: KeyTimeout, Type: spi.KeyDuration, Default: "60s", Check: spi.CheckPositive,
		Doc: "Timeout of one upload or delete request."},
}
