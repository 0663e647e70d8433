package conf

// Helpers of the external tests (package conf_test), which link the
// built-in backends through package catalog.

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// EnvOf is a LoadOptions.LookupEnv that reads m.
var EnvOf = envOf

// Canonical checks v against the schema key name and returns its
// canonical form.
func Canonical(name, v string) (string, error) {
	k, ok := builtinSchema().lookup(name)
	if !ok {
		return "", errUnknownKey(name)
	}
	return canonical(k, v)
}

type errUnknownKey string

func (e errUnknownKey) Error() string { return "no key " + string(e) }

// ExpandDefault substitutes a schema default with fixed variables.
func ExpandDefault(v string) (string, error) {
	vars := map[string]string{"EGRET_HOME": "/e", "CLUSTER": "c", "ROLE": "r", "ENVIRON": "e", "TOPOLOGY": "t", "HOME": "/h"}
	return newSubstituter(vars, nil, envOf(nil)).Expand(v)
}

// PluginNamespaceKinds are the kinds of the plugin namespaces.
func PluginNamespaceKinds() []string {
	var out []string
	for _, ns := range pluginNamespaces {
		out = append(out, ns.kind)
	}
	return out
}
