package launcher_test

// The built-in backends and their config keys, which conf.Load needs.
import _ "github.com/egret-stream/egret/catalog"
