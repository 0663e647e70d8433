package aurora

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/egret-stream/egret/schedulers/aurora/auroraapi"
)

// APIPath is where the Aurora scheduler serves its Thrift API.
const APIPath = "/api"

// ContentType is the media type of the Thrift JSON protocol that requests
// are sent with (Aurora also accepts application/x-thrift for it).
const ContentType = "application/vnd.apache.thrift.json"

// maxResponseBytes bounds what is read of one API response.
const maxResponseBytes = 64 << 20

// httpError is an HTTP answer other than 200 from the API endpoint.
type httpError struct {
	code int
	body string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.code, e.body)
}

// transport is a thrift.TClient that sends each call as one HTTP POST of a
// TJSONProtocol message to the scheduler's /api, honouring the call's
// context, with HTTP basic authentication when a user is set. It is safe
// for concurrent use.
type transport struct {
	url            string
	user, password string
	http           *http.Client
}

var _ thrift.TClient = (*transport)(nil)

// Call implements thrift.TClient.
func (t *transport) Call(ctx context.Context, method string, args, result thrift.TStruct) (thrift.ResponseMeta, error) {
	out := thrift.NewTMemoryBuffer()
	c := thrift.NewTStandardClient(nil, thrift.NewTJSONProtocol(out))
	if err := c.Send(ctx, thrift.NewTJSONProtocol(out), 1, method, args); err != nil {
		return thrift.ResponseMeta{}, fmt.Errorf("encode %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(out.Bytes()))
	if err != nil {
		return thrift.ResponseMeta{}, err
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Accept", ContentType)
	if t.user != "" {
		req.SetBasicAuth(t.user, t.password)
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return thrift.ResponseMeta{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return thrift.ResponseMeta{}, fmt.Errorf("read the answer to %s: %w", method, err)
	}
	if resp.StatusCode != http.StatusOK {
		return thrift.ResponseMeta{}, &httpError{code: resp.StatusCode, body: summary(body)}
	}
	in := thrift.NewTMemoryBuffer()
	_, _ = in.Write(body)
	if err := c.Recv(ctx, thrift.NewTJSONProtocol(in), 1, method, result); err != nil {
		return thrift.ResponseMeta{}, fmt.Errorf("decode the answer to %s (is %s an Aurora scheduler?): %w", method, t.url, err)
	}
	return thrift.ResponseMeta{}, nil
}

// summary shortens an error body to one line.
func summary(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}

// apiClient is the generated client over the HTTP transport.
func newAPIClient(t *transport) *auroraapi.AuroraSchedulerManagerClient {
	return auroraapi.NewAuroraSchedulerManagerClient(t)
}

// responseError is a Response whose code is not OK.
type responseError struct {
	code    auroraapi.ResponseCode
	message string
}

func (e *responseError) Error() string {
	return fmt.Sprintf("%s: %s", e.code, e.message)
}

// messages joins the details of a response.
func messages(r *auroraapi.Response) string {
	var parts []string
	for _, d := range r.GetDetails() {
		if m := strings.TrimSpace(d.GetMessage()); m != "" {
			parts = append(parts, m)
		}
	}
	if len(parts) == 0 {
		return "(no message)"
	}
	return strings.Join(parts, "; ")
}

// checkResponse turns a response that is not OK (or WARNING) into a
// *responseError.
func checkResponse(r *auroraapi.Response) error {
	if r == nil {
		return errors.New("the scheduler sent no response")
	}
	switch r.GetResponseCode() {
	case auroraapi.ResponseCode_OK, auroraapi.ResponseCode_WARNING:
		return nil
	}
	return &responseError{code: r.GetResponseCode(), message: messages(r)}
}
