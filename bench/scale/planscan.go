package scale

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// planHeader is what a stand-in reads of a physical plan: its version and
// the stream managers' data ports. The topology and packing plan are
// skipped undecoded: N stand-ins share this process's cores, while each
// real stream manager decodes its plan on its own machine.
type planHeader struct {
	version uint64
	ports   map[int32]int32 // container -> data port
}

// Field numbers (proto/egretpb).
const (
	fieldPlanStmgrs       = 3 // PhysicalPlan.stmgrs
	fieldPlanVersion      = 5 // PhysicalPlan.version
	fieldLocContainer     = 1 // StMgrLocation.container
	fieldLocDataPort      = 3 // StMgrLocation.data_port
	fieldNewPlanPplan     = 1 // NewPhysicalPlan.pplan
	fieldRegisterError    = 1 // StMgrRegisterResponse.error
	fieldRegisterResponse = 2 // StMgrRegisterResponse.pplan
)

// eachField calls f for every field of the message b.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return fmt.Errorf("bad tag: %w", protowire.ParseError(k))
		}
		b = b[k:]
		var v []byte
		var n uint64
		switch typ {
		case protowire.VarintType:
			n, k = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			v, k = protowire.ConsumeBytes(b)
		default:
			k = protowire.ConsumeFieldValue(num, typ, b)
		}
		if k < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(k))
		}
		b = b[k:]
		if err := f(num, typ, v, n); err != nil {
			return err
		}
	}
	return nil
}

// scanPlan reads a PhysicalPlan's header from its encoding.
func scanPlan(b []byte) (planHeader, error) {
	h := planHeader{ports: map[int32]int32{}}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == fieldPlanVersion && typ == protowire.VarintType:
			h.version = n
		case num == fieldPlanStmgrs && typ == protowire.BytesType:
			var c, port int32
			if err := eachField(v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
				switch {
				case num == fieldLocContainer && typ == protowire.VarintType:
					c = int32(n)
				case num == fieldLocDataPort && typ == protowire.VarintType:
					port = int32(n)
				}
				return nil
			}); err != nil {
				return err
			}
			h.ports[c] = port
		}
		return nil
	})
	return h, err
}

// embedded returns the bytes of field num of message b (nil when absent).
func embedded(b []byte, num protowire.Number) ([]byte, error) {
	var out []byte
	err := eachField(b, func(n protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if n == num && typ == protowire.BytesType {
			out = v
		}
		return nil
	})
	return out, err
}
