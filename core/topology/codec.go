package topology

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/proto/egretpb"
)

// FormatVersion is the version of the definition format written by Marshal.
const FormatVersion = 1

var (
	kindToPB = map[Kind]egretpb.ComponentKind{
		Spout: egretpb.ComponentKind_COMPONENT_KIND_SPOUT,
		Bolt:  egretpb.ComponentKind_COMPONENT_KIND_BOLT,
	}
	groupingToPB = map[Grouping]egretpb.Grouping{
		Shuffle: egretpb.Grouping_GROUPING_SHUFFLE, Fields: egretpb.Grouping_GROUPING_FIELDS,
		All: egretpb.Grouping_GROUPING_ALL, Global: egretpb.Grouping_GROUPING_GLOBAL,
		None: egretpb.Grouping_GROUPING_NONE, Direct: egretpb.Grouping_GROUPING_DIRECT,
		Custom: egretpb.Grouping_GROUPING_CUSTOM, LocalOrShuffle: egretpb.Grouping_GROUPING_LOCAL_OR_SHUFFLE,
	}
	kindFromPB     = invert(kindToPB)
	groupingFromPB = invert(groupingToPB)
)

func invert[K, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// ToProto converts t to its protobuf form.
func ToProto(t *Topology) *egretpb.Topology {
	pb := &egretpb.Topology{
		FormatVersion: FormatVersion,
		Name:          t.Name,
		Id:            t.ID,
		Config:        cloneMap(t.Config),
	}
	for _, c := range t.Components {
		pc := &egretpb.Component{
			Name:        c.Name,
			Kind:        kindToPB[c.Kind],
			Parallelism: int32(c.Parallelism),
			Config:      cloneMap(c.Config),
		}
		for _, s := range c.Outputs {
			pc.Outputs = append(pc.Outputs, &egretpb.StreamSchema{
				Id: s.ID, Fields: append([]string(nil), s.Fields...), Direct: s.Direct,
			})
		}
		for _, in := range c.Inputs {
			pc.Inputs = append(pc.Inputs, &egretpb.Input{
				Component: in.Component, Stream: in.Stream, Grouping: groupingToPB[in.Grouping],
				Fields: append([]string(nil), in.Fields...), CustomName: in.CustomName,
			})
		}
		pb.Components = append(pb.Components, pc)
	}
	return pb
}

// FromProto converts a protobuf definition to a Topology. It checks only
// the format (version, enum values); call Validate for the semantics.
func FromProto(pb *egretpb.Topology) (*Topology, error) {
	if pb.GetFormatVersion() != FormatVersion {
		return nil, fmt.Errorf("topology definition has format version %d; this Egret reads version %d (rebuild the topology binary against this Egret version)", pb.GetFormatVersion(), FormatVersion)
	}
	t := &Topology{Name: pb.GetName(), ID: pb.GetId(), Config: cloneMap(pb.GetConfig())}
	for _, pc := range pb.GetComponents() {
		kind, ok := kindFromPB[pc.GetKind()]
		if !ok {
			return nil, fmt.Errorf("component %q: unknown kind %v in definition", pc.GetName(), pc.GetKind())
		}
		c := Component{Name: pc.GetName(), Kind: kind, Parallelism: int(pc.GetParallelism()), Config: cloneMap(pc.GetConfig())}
		for _, s := range pc.GetOutputs() {
			c.Outputs = append(c.Outputs, Stream{ID: s.GetId(), Fields: append([]string(nil), s.GetFields()...), Direct: s.GetDirect()})
		}
		for _, in := range pc.GetInputs() {
			g, ok := groupingFromPB[in.GetGrouping()]
			if !ok {
				return nil, fmt.Errorf("component %q input %s/%s: unknown grouping %v in definition", pc.GetName(), in.GetComponent(), in.GetStream(), in.GetGrouping())
			}
			c.Inputs = append(c.Inputs, Input{
				Component: in.GetComponent(), Stream: in.GetStream(), Grouping: g,
				Fields: append([]string(nil), in.GetFields()...), CustomName: in.GetCustomName(),
			})
		}
		t.Components = append(t.Components, c)
	}
	return t, nil
}

// Marshal encodes t as a deterministic protobuf definition.
func Marshal(t *Topology) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(ToProto(t))
	if err != nil {
		return nil, fmt.Errorf("encode topology %q: %w", t.Name, err)
	}
	return b, nil
}

// Unmarshal decodes a definition written by Marshal. Corrupt bytes give an
// error, never a panic.
func Unmarshal(b []byte) (*Topology, error) {
	var pb egretpb.Topology
	if err := proto.Unmarshal(b, &pb); err != nil {
		return nil, fmt.Errorf("decode topology definition: %w", err)
	}
	return FromProto(&pb)
}
