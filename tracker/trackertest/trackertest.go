// Package trackertest checks tracker answers against the tracker's
// OpenAPI document (tracker/openapi.yaml), for tests.
package trackertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/egret-stream/egret/tracker"
)

// Doc is the loaded and validated OpenAPI document.
type Doc struct{ t *openapi3.T }

// Load parses the tracker's OpenAPI document and validates it.
func Load() (*Doc, error) {
	l := openapi3.NewLoader()
	t, err := l.LoadFromData(tracker.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("parse openapi.yaml: %w", err)
	}
	if err := t.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI 3 document: %w", err)
	}
	return &Doc{t: t}, nil
}

// Paths lists the documented paths.
func (d *Doc) Paths() []string {
	var out []string
	for p := range d.t.Paths.Map() {
		out = append(out, p)
	}
	return out
}

// Check validates a JSON answer of GET path with the status against the
// schema the document gives for it.
func (d *Doc) Check(path string, status int, body []byte) error {
	item := d.t.Paths.Value(path)
	if item == nil || item.Get == nil {
		return fmt.Errorf("GET %s is not documented", path)
	}
	resp := item.Get.Responses.Value(strconv.Itoa(status))
	if resp == nil || resp.Value == nil {
		return fmt.Errorf("GET %s: status %d is not documented", path, status)
	}
	mt := resp.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return fmt.Errorf("GET %s: status %d has no JSON schema", path, status)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("GET %s: answer is not JSON: %w", path, err)
	}
	if err := mt.Schema.Value.VisitJSON(v); err != nil {
		return fmt.Errorf("GET %s (%d): answer does not match the schema: %w", path, status, err)
	}
	return nil
}
