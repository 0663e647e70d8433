package ociimage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// archiveImage is the image of manifest digest among the blobs of an
// archive read into memory.
func archiveImage(files map[string][]byte, digest v1.Hash) (v1.Image, error) {
	blob := func(h v1.Hash) ([]byte, error) {
		b, ok := files["blobs/"+h.Algorithm+"/"+h.Hex]
		if !ok {
			return nil, fmt.Errorf("blob %s is missing", h)
		}
		if got, _, _ := v1.SHA256(bytes.NewReader(b)); got != h {
			return nil, fmt.Errorf("blob %s has digest %s", h, got)
		}
		return b, nil
	}
	raw, err := blob(digest)
	if err != nil {
		return nil, err
	}
	var m v1.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", digest, err)
	}
	cfg, err := blob(m.Config.Digest)
	if err != nil {
		return nil, err
	}
	core := &memImage{manifest: raw, config: cfg, mt: m.MediaType, layers: map[v1.Hash]*memLayer{}}
	for _, l := range m.Layers {
		b, err := blob(l.Digest)
		if err != nil {
			return nil, err
		}
		core.layers[l.Digest] = &memLayer{data: b, desc: l}
	}
	return partial.CompressedToImage(core)
}

type memImage struct {
	manifest, config []byte
	mt               types.MediaType
	layers           map[v1.Hash]*memLayer
}

func (m *memImage) RawConfigFile() ([]byte, error)      { return m.config, nil }
func (m *memImage) MediaType() (types.MediaType, error) { return m.mt, nil }
func (m *memImage) RawManifest() ([]byte, error)        { return m.manifest, nil }
func (m *memImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if l, ok := m.layers[h]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("no layer %s", h)
}

type memLayer struct {
	data []byte
	desc v1.Descriptor
}

func (l *memLayer) Digest() (v1.Hash, error)            { return l.desc.Digest, nil }
func (l *memLayer) Size() (int64, error)                { return l.desc.Size, nil }
func (l *memLayer) MediaType() (types.MediaType, error) { return l.desc.MediaType, nil }
func (l *memLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.data)), nil
}
