package plan

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/proto/egretpb"
)

// ToProto converts the packing plan to its protobuf form.
func (p *PackingPlan) ToProto() *egretpb.PackingPlan {
	pb := &egretpb.PackingPlan{TopologyId: p.TopologyID}
	for _, c := range p.Containers {
		pc := &egretpb.ContainerPlan{Id: int32(c.ID), Required: resourcesToProto(c.Required)}
		for _, in := range c.Instances {
			pc.Instances = append(pc.Instances, &egretpb.InstancePlan{
				Component: in.Component, TaskId: int32(in.TaskID), Index: int32(in.Index),
				Resources: resourcesToProto(in.Resources),
			})
		}
		pb.Containers = append(pb.Containers, pc)
	}
	return pb
}

func resourcesToProto(r Resources) *egretpb.Resources {
	return &egretpb.Resources{Cpu: r.CPU, Ram: r.RAM, Disk: r.Disk}
}

func resourcesFromProto(r *egretpb.Resources) Resources {
	return Resources{CPU: r.GetCpu(), RAM: r.GetRam(), Disk: r.GetDisk()}
}

// FromProto converts a protobuf packing plan.
func FromProto(pb *egretpb.PackingPlan) *PackingPlan {
	p := &PackingPlan{TopologyID: pb.GetTopologyId()}
	for _, pc := range pb.GetContainers() {
		c := Container{ID: int(pc.GetId()), Required: resourcesFromProto(pc.GetRequired())}
		for _, in := range pc.GetInstances() {
			c.Instances = append(c.Instances, Instance{
				Component: in.GetComponent(), TaskID: int(in.GetTaskId()), Index: int(in.GetIndex()),
				Resources: resourcesFromProto(in.GetResources()),
			})
		}
		p.Containers = append(p.Containers, c)
	}
	return p
}

// Marshal encodes the plan deterministically.
func (p *PackingPlan) Marshal() ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(p.ToProto())
}

// Unmarshal decodes a plan written by Marshal.
func Unmarshal(b []byte) (*PackingPlan, error) {
	var pb egretpb.PackingPlan
	if err := proto.Unmarshal(b, &pb); err != nil {
		return nil, fmt.Errorf("decode packing plan: %w", err)
	}
	return FromProto(&pb), nil
}

// Container returns the container with the given id.
func (p *PackingPlan) Container(id int) (*Container, bool) {
	for i := range p.Containers {
		if p.Containers[i].ID == id {
			return &p.Containers[i], true
		}
	}
	return nil, false
}
