package api

import "sort"

// StateInfo describes one state of a task's saved operator states: its
// name, whether it is keyed state (its entries are in the state backend) or
// operator state, its descriptor (the kind and the key and value types, as
// the task declared them) and, for operator state, its restore mode.
type StateInfo struct {
	Name       string `json:"name"`
	Keyed      bool   `json:"keyed"`
	Descriptor string `json:"descriptor"`
	Restore    string `json:"restore,omitempty"`
	// Entries is the number of entries of an operator state.
	Entries int `json:"entries,omitempty"`
}

// DescribeStates lists the states of a task's saved operator states
// (States.MarshalBinary's bytes), by name; savepoints record them.
func DescribeStates(b []byte) ([]StateInfo, error) {
	s, err := UnmarshalStates(b)
	if err != nil {
		return nil, err
	}
	out := make([]StateInfo, 0, len(s.raw)+len(s.keyed))
	for n, r := range s.raw {
		entries := 0
		_ = forEntries(r.data, func(_, _ []byte) error { entries++; return nil })
		out = append(out, StateInfo{Name: n, Descriptor: r.desc, Restore: r.mode.String(), Entries: entries})
	}
	for n, d := range s.keyed {
		out = append(out, StateInfo{Name: n, Keyed: true, Descriptor: d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
