package conf

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
)

//go:embed clusters
var embedded embed.FS

// LoadOptions says which cluster to load and how.
type LoadOptions struct {
	Cluster  string // required
	Role     string // default: $USER, unless egret.config.role.required
	Environ  string // default: "default", unless egret.config.env.required
	Topology string // empty: ${TOPOLOGY} is kept verbatim (see Cluster.WithTopology)
	// ConfigPath is the operator's override directory holding <cluster>/
	// subdirectories; default ~/.egret/conf. A leading ~/ means $HOME.
	ConfigPath string
	// Overrides are --config-property arguments, key=value; later wins.
	Overrides []string
	// EgretHome is ${EGRET_HOME}; default $EGRET_HOME, then ${HOME}/.egret.
	EgretHome string
	// LookupEnv reads environment variables; nil means os.LookupEnv (and,
	// only then, the OS user database as a fallback for $USER and $HOME).
	LookupEnv func(string) (string, bool)
	// FindBackend, when set, checks that each backend the config selects
	// exists, built in or as a plugin binary: kind is one of the Kind
	// constants, pluginDir the resolved egret.plugin.directory. An error
	// is reported as a problem of the selecting key. nil: backend names
	// are checked for their syntax only.
	FindBackend func(kind, name, pluginDir string) error
	// PluginKeys, when set, asks each external plugin the config selects
	// (one FindBackend found) for the config keys it declares: kind is one
	// of the spi.Kind constants, pluginDir the resolved
	// egret.plugin.directory. Declared keys are checked, defaulted and
	// documented like a built-in backend's; declared false (a plugin that
	// declares none) lets its keys pass unchecked. An error is reported as
	// a problem of the selecting key.
	PluginKeys func(kind, name, pluginDir string) (keys []spi.Key, declared bool, err error)
}

// Load reads, merges, substitutes and validates the configuration of
// opts.Cluster. Problems in the files are reported together in a
// *ValidationError; an unknown cluster wraps ErrUnknownCluster.
func Load(opts LoadOptions) (*Cluster, error) {
	l, err := newLoader(opts)
	if err != nil {
		return nil, err
	}
	return l.load()
}

// Validate loads the cluster's configuration and returns what Load would
// return as an error, for `egret config validate`.
func Validate(opts LoadOptions) error {
	_, err := Load(opts)
	return err
}

// Clusters lists the clusters that can be loaded: the embedded ones and the
// directories in configPath ("" means ~/.egret/conf), sorted.
func Clusters(configPath string) []string {
	if configPath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			configPath = filepath.Join(home, ".egret", "conf")
		}
	} else if rest, ok := strings.CutPrefix(configPath, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			configPath = filepath.Join(home, rest)
		}
	}
	return clusterNames(configPath)
}

func clusterNames(configPath string) []string {
	var out []string
	if entries, err := fs.ReadDir(embedded, "clusters"); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, e.Name())
			}
		}
	}
	if configPath != "" {
		if entries, err := os.ReadDir(configPath); err == nil {
			for _, e := range entries {
				if isDir(filepath.Join(configPath, e.Name())) && names.Check(names.Cluster, e.Name()) == nil {
					out = append(out, e.Name())
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// entry is one merged value and where it came from.
type entry struct {
	value  string
	origin string
	line   int
}

type loader struct {
	opts       LoadOptions
	osEnv      bool
	env        func(string) (string, bool)
	home       string
	configPath string
	values     map[string]entry
	sources    []string       // files read, in load order
	rank       map[string]int // origin -> position, to sort problems
	problems   []Problem
	schema     *schemaTable
	// declared are the selected external plugins ("kind/name") that
	// declared their keys: their other keys are unknown.
	declared map[string]bool
}

func newLoader(opts LoadOptions) (*loader, error) {
	if len(spi.BackendNames(spi.KindScheduler)) == 0 {
		return nil, errors.New("no built-in backend is linked into this program, so their config keys are unknown: import github.com/egret-stream/egret/catalog")
	}
	if opts.Cluster == "" {
		return nil, errors.New("no cluster given")
	}
	if err := names.Check(names.Cluster, opts.Cluster); err != nil {
		return nil, err
	}
	// ${TOPOLOGY} becomes part of paths: the launcher checked the name
	// already; checked again here for every other caller.
	if opts.Topology != "" {
		if err := names.Check(names.Topology, opts.Topology); err != nil {
			return nil, err
		}
	}
	l := &loader{opts: opts, env: opts.LookupEnv, values: map[string]entry{}, rank: map[string]int{}}
	if l.env == nil {
		l.env, l.osEnv = os.LookupEnv, true
	}
	if h, ok := l.env("HOME"); ok && h != "" {
		l.home = h
	} else if l.osEnv {
		l.home, _ = os.UserHomeDir()
	}
	l.configPath = opts.ConfigPath
	switch {
	case l.configPath == "" && l.home != "":
		l.configPath = filepath.Join(l.home, ".egret", "conf")
	case strings.HasPrefix(l.configPath, "~/") && l.home != "":
		l.configPath = filepath.Join(l.home, l.configPath[2:])
	}
	return l, nil
}

func (l *loader) problem(p Problem) { l.problems = append(l.problems, p) }

func (l *loader) load() (*Cluster, error) {
	cluster := l.opts.Cluster
	_, embErr := fs.Stat(embedded, "clusters/"+cluster)
	userDir := ""
	if l.configPath != "" {
		userDir = filepath.Join(l.configPath, cluster)
	}
	hasUser := userDir != "" && isDir(userDir)
	if embErr != nil && !hasUser {
		where := "define a new cluster as a directory of YAML files"
		if l.configPath != "" {
			where += " in " + filepath.Join(l.configPath, cluster)
		}
		return nil, fmt.Errorf("cluster %q: %w (known clusters: %s; %s)",
			cluster, ErrUnknownCluster, strings.Join(clusterNames(l.configPath), ", "), where)
	}

	// Layer 1: embedded defaults.
	if embErr == nil {
		for _, f := range Files {
			name := "clusters/" + cluster + "/" + f + ".yaml"
			data, err := embedded.ReadFile(name)
			if err != nil {
				continue
			}
			l.mergeFile("embedded:"+name, data)
		}
	}
	// Layer 2: the operator's files.
	if hasUser {
		l.readUserDir(userDir)
	}
	// Layer 3: --config-property.
	l.mergeOverrides()

	role, environ := l.roleEnv()
	vars := map[string]string{"CLUSTER": cluster, "ROLE": role, "ENVIRON": environ, "TOPOLOGY": l.opts.Topology}
	keep := map[string]bool{}
	for _, n := range []string{"ROLE", "ENVIRON", "TOPOLOGY"} {
		if vars[n] == "" {
			delete(vars, n)
			keep[n] = true
		}
	}
	if l.home != "" {
		vars["HOME"] = l.home
	}
	switch home, ok := l.env("EGRET_HOME"); {
	case l.opts.EgretHome != "":
		vars["EGRET_HOME"] = l.opts.EgretHome
	case ok && home != "":
		vars["EGRET_HOME"] = home
	default:
		vars["EGRET_HOME"] = "${HOME}/.egret"
	}
	sub := newSubstituter(vars, keep, l.env)

	l.schema = builtinSchema()
	sel := l.selection(sub)
	l.plugins(sel, sub)
	l.applyDefaults(sel)

	cfg := make(spi.Config, len(l.values))
	origin := make(map[string]string, len(l.values))
	valid := map[string]bool{}
	keys := make([]string, 0, len(l.values))
	for k := range l.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e := l.values[k]
		origin[k] = e.origin
		v, err := sub.Expand(e.value)
		if err != nil {
			l.problem(Problem{File: e.origin, Line: e.line, Key: k, Message: err.Error()})
			cfg[k] = e.value
			continue
		}
		cfg[k] = v
		if sk, ok := l.schema.lookup(k); ok {
			if v == "" && sk.Type != spi.KeyString && sk.Type != spi.KeyList {
				if !sk.Required { // a missing required key is reported below
					l.problem(Problem{File: e.origin, Line: e.line, Key: k, Message: fmt.Sprintf("empty value; expected %s", describeType(sk))})
				}
				continue
			}
			c, err := canonical(sk, v)
			if err != nil {
				l.problem(Problem{File: e.origin, Line: e.line, Key: k, Message: err.Error()})
				continue
			}
			cfg[k] = c
			valid[k] = true
			continue
		}
		if msg := l.unknownKey(k, sel); msg != "" {
			l.problem(Problem{File: e.origin, Line: e.line, Key: k, Message: msg})
		}
	}
	for i := range l.schema.keys {
		sk := &l.schema.keys[i]
		if sk.Required && sel.applies(sk) && strings.TrimSpace(cfg[sk.Name]) == "" {
			msg := fmt.Sprintf("required key is missing; set it in %s.yaml of cluster %s", sk.File, cluster)
			if sk.Backend != "" {
				msg = fmt.Sprintf("required by the %s %s; set it in %s.yaml of cluster %s",
					strings.Split(sk.Backend, "/")[1], spi.KindNoun(strings.Split(sk.Backend, "/")[0]), sk.File, cluster)
			}
			e := l.values[sk.Name]
			l.problem(Problem{File: e.origin, Line: e.line, Key: sk.Name, Message: msg})
		}
	}
	l.crossCheck(cfg, valid)
	l.sinkCheck(cfg, valid)

	if len(l.problems) > 0 {
		l.sortProblems()
		return nil, &ValidationError{Cluster: cluster, Problems: l.problems}
	}
	return &Cluster{
		Name: cluster, Role: role, Environ: environ, Topology: l.opts.Topology,
		cfg: cfg, origin: origin, sources: l.sources, opts: l.opts,
	}, nil
}

func (l *loader) addSource(origin string) {
	if _, ok := l.rank[origin]; !ok {
		l.rank[origin] = len(l.rank)
	}
}

func (l *loader) mergeFile(origin string, data []byte) {
	l.addSource(origin)
	l.sources = append(l.sources, origin)
	vals, problems := readYAML(origin, data)
	l.problems = append(l.problems, problems...)
	for k, v := range vals {
		l.values[k] = entry{value: v.value, origin: origin, line: v.line}
	}
}

func (l *loader) readUserDir(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		l.addSource(dir)
		l.problem(Problem{File: dir, Message: fmt.Sprintf("cannot read the directory: %v", err)})
		return
	}
	present := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		ext := path.Ext(name)
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		base := strings.TrimSuffix(name, ext)
		if ext == ".yaml" && slices.Contains(Files, base) {
			present[base] = true
			continue
		}
		p := filepath.Join(dir, name)
		l.addSource(p)
		msg := "unknown config file: expected " + strings.Join(Files, ".yaml, ") + ".yaml"
		if near, d := names.Closest(base, Files); d <= 3 {
			msg += fmt.Sprintf(" (did you mean %s.yaml?)", near)
		}
		l.problem(Problem{File: p, Message: msg})
	}
	for _, f := range Files {
		if !present[f] {
			continue
		}
		p := filepath.Join(dir, f+".yaml")
		data, err := os.ReadFile(p)
		if err != nil {
			l.addSource(p)
			l.problem(Problem{File: p, Message: fmt.Sprintf("cannot read: %v", err)})
			continue
		}
		l.mergeFile(p, data)
	}
}

func (l *loader) mergeOverrides() {
	if len(l.opts.Overrides) == 0 {
		return
	}
	l.addSource(OriginProperty)
	for _, o := range l.opts.Overrides {
		k, v, ok := strings.Cut(o, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		switch {
		case !ok:
			l.problem(Problem{File: OriginProperty, Message: fmt.Sprintf("%q is not key=value", o)})
		case k == "":
			l.problem(Problem{File: OriginProperty, Message: fmt.Sprintf("%q has an empty key; expected key=value", o)})
		case strings.ContainsAny(k, " \t") || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, ".."):
			l.problem(Problem{File: OriginProperty, Message: fmt.Sprintf("%q: %q is not a dotted key", o, k)})
		default:
			l.values[k] = entry{value: v, origin: OriginProperty}
		}
	}
}

// roleEnv resolves role and environment, reporting a missing required one.
func (l *loader) roleEnv() (role, environ string) {
	role, environ = l.opts.Role, l.opts.Environ
	for kind, v := range map[names.Kind]string{names.Role: role, names.Environ: environ} {
		if v == "" {
			continue
		}
		if err := names.Check(kind, v); err != nil {
			l.problem(Problem{Message: err.Error()})
		}
	}
	required := func(key string) bool {
		spi.MarkRead(key)
		b, _ := parseBool(strings.TrimSpace(l.values[key].value))
		return b
	}
	if role == "" {
		if required("egret.config.role.required") {
			e := l.values["egret.config.role.required"]
			l.problem(Problem{File: e.origin, Line: e.line, Key: "egret.config.role.required",
				Message: fmt.Sprintf("cluster %s requires a role: give %s/<role>/<environ>", l.opts.Cluster, l.opts.Cluster)})
		} else {
			role = l.userName()
			if role == "" {
				l.problem(Problem{Message: fmt.Sprintf("no role given and $USER is not set: give %s/<role>", l.opts.Cluster)})
			} else if err := names.Check(names.Role, role); err != nil {
				l.problem(Problem{Message: fmt.Sprintf("no role given and the user name is not a valid role: %v; give %s/<role>", err, l.opts.Cluster)})
			}
		}
	}
	if environ == "" {
		if required("egret.config.env.required") {
			e := l.values["egret.config.env.required"]
			l.problem(Problem{File: e.origin, Line: e.line, Key: "egret.config.env.required",
				Message: fmt.Sprintf("cluster %s requires an environment: give %s/<role>/<environ>", l.opts.Cluster, l.opts.Cluster)})
		} else {
			environ = "default"
		}
	}
	return role, environ
}

func (l *loader) userName() string {
	for _, n := range []string{"USER", "LOGNAME"} {
		if v, ok := l.env(n); ok && v != "" {
			return v
		}
	}
	if l.osEnv {
		if u, err := user.Current(); err == nil {
			return u.Username
		}
	}
	return ""
}

// selection holds the backends the config selects, per kind: one of each
// kind, and the listed metrics sinks.
type selection map[string][]string

func (l *loader) selection(sub *substituter) selection {
	value := func(key string) string { return l.resolved(sub, key) }
	sel := selection{}
	for _, b := range backendKeys {
		sel[b.kind] = []string{value(b.key)}
	}
	sel[spi.KindMetricsSink] = splitList(value(keySinks))
	return sel
}

// resolved returns the substituted value of key as set so far (its
// default when unset), "" when it cannot be substituted: enough to select
// backends before the values are checked.
func (l *loader) resolved(sub *substituter, key string) string {
	e, ok := l.values[key]
	if !ok {
		if sk, ok := l.schema.lookup(key); ok {
			e.value = sk.Default
		}
	}
	v, err := sub.Expand(e.value)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(v)
}

// plugins checks that each selected backend that is not built in exists
// (FindBackend) and adds the keys it declares (PluginKeys) to the schema.
func (l *loader) plugins(sel selection, sub *substituter) {
	l.declared = map[string]bool{}
	if l.opts.FindBackend == nil && l.opts.PluginKeys == nil {
		return
	}
	dir := l.resolved(sub, "egret.plugin.directory")
	declared := map[string][]spi.Key{}
	selectors := append(backendKeys[:len(backendKeys):len(backendKeys)], struct{ kind, key string }{spi.KindMetricsSink, keySinks})
	for _, b := range selectors {
		for _, name := range sel[b.kind] {
			if name == "" || !nameRE.MatchString(name) || slices.Contains(l.schema.builtins[b.kind], name) {
				continue // a bad name is reported by its check
			}
			e := l.values[b.key]
			report := func(err error) {
				msg := err.Error()
				if b.kind == spi.KindMetricsSink {
					msg += didYouMean(name, l.schema.builtins[b.kind], 2)
				}
				l.problem(Problem{File: e.origin, Line: e.line, Key: b.key, Message: msg})
			}
			if l.opts.FindBackend != nil {
				if err := l.opts.FindBackend(b.kind, name, dir); err != nil {
					report(err)
					continue
				}
			}
			if l.opts.PluginKeys == nil {
				continue
			}
			keys, ok, err := l.opts.PluginKeys(b.kind, name, dir)
			if err != nil {
				report(fmt.Errorf("the %s plugin %s cannot tell its config keys: %w", spi.KindNoun(b.kind), name, err))
				continue
			}
			if ok {
				declared[b.kind+"/"+name] = keys
				l.declared[b.kind+"/"+name] = true
			}
		}
	}
	if len(declared) == 0 {
		return
	}
	t, problems := buildSchema(declared)
	for _, p := range problems {
		l.problem(Problem{Message: p})
	}
	l.schema = t
}

func (s selection) selected(kind, name string) bool {
	return name != "" && slices.Contains(s[kind], name)
}

// applies reports whether key k is read in this config: a core key, or a
// key of a selected backend.
func (s selection) applies(k *Key) bool {
	if k.Backend == "" {
		return true
	}
	kind, name, _ := strings.Cut(k.Backend, "/")
	return s.selected(kind, name)
}

func (l *loader) applyDefaults(sel selection) {
	for i := range l.schema.keys {
		sk := &l.schema.keys[i]
		if _, set := l.values[sk.Name]; set || !sel.applies(sk) || (sk.Required && sk.Default == "") {
			continue
		}
		l.values[sk.Name] = entry{value: sk.Default, origin: OriginDefault}
	}
}

// unknownKey returns the problem with a key that is not in the schema, or
// "" when it is a key of the selected external plugin that declares no
// keys and passes unchecked.
func (l *loader) unknownKey(k string, sel selection) string {
	t := l.schema
	if !strings.HasPrefix(k, "egret.") {
		return "unknown key (Egret keys start with egret.)" + suggestFrom(k, t.names())
	}
	for _, r := range removedKeys {
		if k == r.name || strings.HasPrefix(k, r.name+".") {
			return "no longer a key: " + r.why + "; delete it"
		}
	}
	for _, ns := range pluginNamespaces {
		rest, ok := strings.CutPrefix(k, ns.prefix+".")
		if !ok {
			continue
		}
		name, sub, ok := strings.Cut(rest, ".")
		if !ok || sub == "" {
			continue
		}
		scope := ns.prefix + "." + name
		builtin := slices.Contains(t.builtins[ns.kind], name)
		if builtin && t.hasPrefix(scope) {
			return fmt.Sprintf("unknown key of the built-in %s %s", name, spi.KindNoun(ns.kind)) + t.suggestIn(k, scope)
		}
		if l.declared[ns.kind+"/"+name] {
			return fmt.Sprintf("unknown key of the %s plugin %s", spi.KindNoun(ns.kind), name) + t.suggestIn(k, scope)
		}
		if t.hasPrefix(scope) {
			continue // not a plugin name but a section of the schema
		}
		if builtin {
			return fmt.Sprintf("the built-in %s %s has no configuration keys", name, spi.KindNoun(ns.kind)) + suggestFrom(k, t.names())
		}
		if !sel.selected(ns.kind, name) {
			continue // not a plugin of this config: an unknown key
		}
		return "" // a key of the selected external plugin, which declares none
	}
	if s := suggestFrom(k, t.names()); s != "" {
		return "unknown key" + s
	}
	near, _ := names.Closest(k, t.names())
	return fmt.Sprintf("unknown key (no built-in or selected backend reads it); did you mean %s?", near)
}

// suggestFrom returns "; did you mean X?" for the name nearest to k, or ""
// when none is close: within two edits, the only name that extends k, or
// within a quarter of k's length and sharing its last segment.
func suggestFrom(k string, known []string) string {
	var ext []string
	for _, n := range known {
		if strings.HasPrefix(n, k+".") {
			ext = append(ext, n)
		}
	}
	if len(ext) == 1 {
		return fmt.Sprintf("; did you mean %s?", ext[0])
	}
	near, d := names.Closest(k, known)
	if d <= 2 || (d <= len(k)/4 && path.Ext(near) == path.Ext(k)) {
		return fmt.Sprintf("; did you mean %s?", near)
	}
	return ""
}

// suggestIn suggests a key of one built-in backend (scope is its key
// prefix): the nearest if close, otherwise its keys when there are few.
func (t *schemaTable) suggestIn(k, scope string) string {
	var names []string
	for _, sk := range t.keys {
		if strings.HasPrefix(sk.Name, scope+".") {
			names = append(names, sk.Name)
		}
	}
	if s := suggestFrom(k, names); s != "" {
		return s
	}
	if len(names) == 1 {
		return fmt.Sprintf("; did you mean %s?", names[0])
	}
	if len(names) > 1 && len(names) <= 5 {
		slices.Sort(names)
		return "; its keys are " + strings.Join(names, ", ")
	}
	return suggestFrom(k, t.names())
}

func describeType(k *Key) string {
	switch k.Type {
	case spi.KeyEnum:
		return "one of " + strings.Join(k.Enum, ", ")
	case spi.KeyInt:
		return "an integer"
	case spi.KeyBool:
		return "true or false"
	case spi.KeyDuration:
		return "a duration (for example 30s)"
	case spi.KeyBytes:
		return "a size (for example 64MiB)"
	case spi.KeyFloat:
		return "a number"
	}
	return k.Type.String()
}

func (l *loader) crossCheck(cfg spi.Config, valid map[string]bool) {
	for _, c := range crossChecks {
		if !valid[c.a] || !valid[c.b] {
			continue
		}
		a, _ := spi.Numeric(cfg[c.a])
		b, _ := spi.Numeric(cfg[c.b])
		if a < b || (c.le && a == b) {
			continue
		}
		rel := "less than"
		if c.le {
			rel = "at most"
		}
		e := l.values[c.a]
		l.problem(Problem{File: e.origin, Line: e.line, Key: c.a,
			Message: fmt.Sprintf("%q must be %s %s (%q)", cfg[c.a], rel, c.b, cfg[c.b])})
	}
}

// sinkCheck reports a graphite sink without the address of its receiver.
func (l *loader) sinkCheck(cfg spi.Config, valid map[string]bool) {
	if !valid["egret.metrics.sinks"] || !slices.Contains(splitList(cfg["egret.metrics.sinks"]), "graphite") || cfg["egret.metrics.graphite.address"] != "" {
		return
	}
	e := l.values["egret.metrics.sinks"]
	l.problem(Problem{File: e.origin, Line: e.line, Key: "egret.metrics.sinks",
		Message: "the graphite sink needs egret.metrics.graphite.address, the host:port of a carbon line receiver"})
}

func (l *loader) sortProblems() {
	rank := func(p Problem) int {
		if r, ok := l.rank[p.File]; ok {
			return r
		}
		if p.File == OriginDefault {
			return len(l.rank)
		}
		return len(l.rank) + 1
	}
	sort.SliceStable(l.problems, func(i, j int) bool {
		a, b := l.problems[i], l.problems[j]
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra < rb
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Key < b.Key
	})
}
