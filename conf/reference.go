package conf

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/egret-stream/egret/core/spi"
)

//go:generate go test -run TestReferenceUpToDate -update .

// Reference renders the operator's configuration reference (markdown) from
// the schema table and the embedded cluster defaults. conf/REFERENCE.md is
// its output; TestReferenceUpToDate fails when the file is stale.
func Reference() string {
	t := builtinSchema()
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Egret operator configuration reference\n\n")
	w("<!-- Generated from conf/schema.go, the keys each backend registers and conf/clusters/ by conf.Reference; do not edit.\n")
	w("     Regenerate with: go test ./conf -run TestReferenceUpToDate -update -->\n\n")
	w("Each cluster has the files %s. ", "`"+strings.Join(Files, ".yaml`, `")+".yaml`")
	w("They load in this order, a later value winning key by key:\n\n")
	w("1. schema defaults (below) of the core keys and of the selected backends' keys;\n")
	w("2. the defaults embedded in egret, `conf/clusters/<cluster>/*.yaml`;\n")
	w("3. the operator's files `~/.egret/conf/<cluster>/*.yaml` (or the directory the CLI is given); only the files present are read, and a cluster that exists only there is a new cluster;\n")
	w("4. `--config-property key=value`.\n\n")
	w("Keys are flat dotted names (`egret.statemgr.root.path: /egret`); nested YAML maps are flattened with dots. ")
	w("Keys are case-insensitive (lower-cased); values keep their case.\n\n")
	w("## Variables\n\n")
	w("Values may use `${EGRET_HOME}` (default `$EGRET_HOME`, else `${HOME}/.egret`), `${CLUSTER}`, `${ROLE}` (default `$USER`), ")
	w("`${ENVIRON}` (default `default`), `${TOPOLOGY}`, `${HOME}` and any environment variable. ")
	w("`${NAME:-fallback}` uses the fallback when `NAME` is unset, `$$` is a literal `$`, and a `$` not followed by `{` stays as it is. ")
	w("A variable's value is expanded in turn (up to %d levels; a cycle is an error). An unknown variable is an error.\n\n", maxVarDepth)
	w("## Types\n\n")
	w("| type | accepted values | stored as |\n|---|---|---|\n")
	w("| string | any text | as written |\n")
	w("| int | decimal integer | decimal |\n")
	w("| float | decimal number | as written |\n")
	w("| bool | true/false (also yes/no, on/off, 1/0) | `true` or `false` |\n")
	w("| duration | Go duration: `500ms`, `30s`, `2m`, `1h30m` | as written |\n")
	w("| bytes | integer, or a size: `64KiB`, `100MiB`, `2GiB` (1024-based; also K, M, G, T), `64KB`, `1GB` (1000-based) | decimal byte count |\n")
	w("| enum | one of the listed values (case-sensitive) | as written |\n")
	w("| list | YAML sequence or comma-separated string | comma-separated |\n\n")
	w("## Backends and external plugins\n\n")
	w("Built-in backends: schedulers %s; state managers %s; uploaders %s; packing %s; metrics sinks %s; checkpoint storages %s.\n\n",
		list(t.builtins[spi.KindScheduler]), list(t.builtins[spi.KindStateManager]), list(t.builtins[spi.KindUploader]),
		list(t.builtins[spi.KindPacking]), list(t.builtins[spi.KindMetricsSink]), list(t.builtins[spi.KindCheckpointStorage]))
	w("Any other name of a scheduler, state manager, uploader, packing algorithm, metrics sink or checkpoint storage is an external plugin: the binary ")
	w("`egret-<kind>-<name>` in `egret.plugin.directory`. `egret config validate` and every command that loads the config ")
	w("(`submit` before it builds or uploads anything) fail when a selected backend is neither built in nor present there. ")
	w("A metrics sink plugin (`egret-metricssink-<name>`) is started by each container's metrics manager, so it must be installed in ")
	w("`egret.plugin.directory` on every node that runs containers, not only where the CLI runs.\n\n")
	w("Each backend declares the keys it reads when it registers (built in) or when the CLI asks it (an external plugin that declares its keys): ")
	w("they are checked, defaulted and listed here like any other key. The keys of a selected external plugin that declares none pass through unchecked: ")
	w("`egret.scheduler.<name>.*`, `egret.statemgr.<name>.*`, `egret.uploader.<name>.*`, `egret.packing.<name>.*`, `egret.metrics.<name>.*` (metrics sinks), `egret.checkpoint.<name>.*` (checkpoint storages) and `egret.<name>.*`. ")
	w("Any other key in the `egret.` namespace, the keys of a backend the config does not select included, is an error naming the nearest known key.\n\n")

	w("## Keys\n\n")
	w("A key marked with a backend is read only by it and gets its default only when that backend is selected.\n")
	for _, f := range Files {
		w("\n### %s.yaml\n\n", f)
		w("| key | type | default | required | backend | description |\n|---|---|---|---|---|---|\n")
		for _, k := range t.keys {
			if k.File != f {
				continue
			}
			typ := k.Type.String()
			if k.Type == spi.KeyEnum {
				typ = "enum: " + strings.Join(k.Enum, ", ")
			}
			def := "`" + k.Default + "`"
			if k.Default == "" {
				def = "(empty)"
				if k.Required {
					def = "—"
				}
			}
			req := ""
			if k.Required {
				req = "yes"
			}
			w("| `%s` | %s | %s | %s | %s | %s |\n", k.Name, cell(typ), cell(def), req, cell(k.Backend), cell(strings.ReplaceAll(k.Doc, "<", `\<`)))
		}
	}

	w("\n## Embedded clusters\n\n")
	w("The values each embedded cluster sets, as written (before substitution). Keys it does not set take the schema default.\n")
	for _, c := range embeddedClusters() {
		w("\n### %s\n\n```yaml\n", c)
		for _, f := range Files {
			data, err := embedded.ReadFile("clusters/" + c + "/" + f + ".yaml")
			if err != nil {
				continue
			}
			vals, _ := readYAML(f, data)
			keys := make([]string, 0, len(vals))
			for k := range vals {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			w("# %s.yaml\n", f)
			for _, k := range keys {
				w("%s: %s\n", k, quoteYAML(vals[k].value))
			}
		}
		w("```\n")
	}
	return b.String()
}

func embeddedClusters() []string {
	var out []string
	entries, _ := fs.ReadDir(embedded, "clusters")
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

func list(names []string) string { return "`" + strings.Join(names, "`, `") + "`" }

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func quoteYAML(v string) string {
	if v == "" || strings.ContainsAny(v[:1], "*&!|>'\"%@`[{") || strings.Contains(v, ": ") || strings.Contains(v, " #") {
		return fmt.Sprintf("%q", v)
	}
	return v
}
