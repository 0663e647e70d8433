package hdfsx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/user"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/egret-stream/egret/core/spi"
)

// Scheme is the URI scheme of HDFS paths.
const Scheme = "hdfs"

// DefaultPort is the NameNode RPC port of Hadoop 3 when an address has none.
const DefaultPort = "8020"

// EnvUser is the variable Hadoop's own clients read the simple-auth user
// name from.
const EnvUser = "HADOOP_USER_NAME"

// Location is a parsed hdfs:// URI.
type Location struct {
	// NameNode is host:port.
	NameNode string
	// Path is absolute and clean.
	Path string
}

// String renders the location as an hdfs:// URI.
func (l Location) String() string {
	return (&url.URL{Scheme: Scheme, Host: l.NameNode, Path: l.Path}).String()
}

// ParseURI parses hdfs://host[:port]/abs/path. The port defaults to 8020.
func ParseURI(uri string) (Location, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return Location{}, fmt.Errorf("not a URI: %w", err)
	}
	if !strings.EqualFold(u.Scheme, Scheme) {
		return Location{}, fmt.Errorf("%q is not an hdfs:// URI", uri)
	}
	if u.Host == "" {
		return Location{}, fmt.Errorf("%q names no NameNode (want hdfs://namenode:port/path)", uri)
	}
	if u.Path == "" || !path.IsAbs(u.Path) {
		return Location{}, fmt.Errorf("%q has no absolute path", uri)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Location{}, fmt.Errorf("%q: an hdfs:// URI takes no user, query or fragment", uri)
	}
	nn, err := NormalizeAddress(u.Host)
	if err != nil {
		return Location{}, err
	}
	return Location{NameNode: nn, Path: path.Clean(u.Path)}, nil
}

// NormalizeAddress checks a NameNode address (host or host:port) and adds
// the default port.
func NormalizeAddress(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", errors.New("empty NameNode address")
	}
	if strings.Contains(addr, "://") {
		return "", fmt.Errorf("NameNode address %q: give host:port, without a scheme", addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, DefaultPort
		if strings.ContainsAny(addr, ":/") {
			return "", fmt.Errorf("NameNode address %q is not host:port", addr)
		}
	}
	if host == "" {
		return "", fmt.Errorf("NameNode address %q has no host", addr)
	}
	if p, err := net.LookupPort("tcp", port); err != nil || p <= 0 || p > 65535 {
		return "", fmt.Errorf("NameNode address %q: bad port %q", addr, port)
	}
	return net.JoinHostPort(host, port), nil
}

// User returns the simple-auth user: name when set, else $HADOOP_USER_NAME,
// else the user running this process.
func User(name string) (string, error) {
	if name != "" {
		return name, nil
	}
	if env := os.Getenv(EnvUser); env != "" {
		return env, nil
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("cannot tell the HDFS user (set it in the config or in $%s): %w", EnvUser, err)
	}
	return u.Username, nil
}

// Dial connects to the NameNode(s) as user. Every TCP connection, to the
// NameNode and to DataNodes, must be made within timeout. ctx bounds the
// connection to the NameNode.
func Dial(ctx context.Context, namenodes []string, userName string, timeout time.Duration) (*hdfs.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		// The client dials without a context of its own; bound it by ours.
		c, cancel := context.WithCancel(dctx)
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		return d.DialContext(c, network, addr)
	}
	dataDial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(dctx, network, addr)
	}
	c, err := hdfs.NewClient(hdfs.ClientOptions{
		Addresses:        namenodes,
		User:             userName,
		NamenodeDialFunc: dial,
		DatanodeDialFunc: dataDial,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("connect to HDFS NameNode %s as %s: %w", strings.Join(namenodes, ","), userName, err)
	}
	return c, nil
}

// IsNotExist reports whether err means a missing file or directory.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// IsNotEmpty reports whether err means a directory that still has entries.
func IsNotEmpty(err error) bool { return errors.Is(err, syscall.ENOTEMPTY) }

// Explain adds the SPI sentinel to errors that have one (a missing file
// wraps spi.ErrNotFound) and turns an HDFS permission error into a line
// saying what to change.
func Explain(err error, userName, what string) error {
	switch {
	case err == nil:
		return nil
	case IsNotExist(err):
		return fmt.Errorf("%w (%w)", err, spi.ErrNotFound)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: HDFS user %q may not %s (grant it with hdfs dfs -chown/-chmod, or set the HDFS user in the config)", err, userName, what)
	default:
		return err
	}
}

// CloseReplicated closes w, retrying while the NameNode has not yet heard
// from enough DataNodes that the last block is stored (Close answers
// "replication in progress" until then), for at most timeout.
func CloseReplicated(ctx context.Context, w *hdfs.FileWriter, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	pause := 50 * time.Millisecond
	for {
		err := w.Close()
		if err == nil || !hdfs.IsErrReplicating(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// PutFile copies the local file at local to remote in HDFS, waiting (as
// CloseReplicated) until the NameNode has the last block stored.
func PutFile(ctx context.Context, c *hdfs.Client, local, remote string, timeout time.Duration) error {
	src, err := os.Open(local)
	if err != nil {
		return err
	}
	defer src.Close()
	w, err := c.Create(remote)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, src); err != nil {
		_ = w.Close()
		return fmt.Errorf("write %s: %w", remote, err)
	}
	return CloseReplicated(ctx, w, timeout)
}

// ClientKeys name the config keys of an HDFS client: the hdfs uploader
// and the hdfs checkpoint storage each have their own, parsed alike.
type ClientKeys struct {
	NameNode, User, Timeout string
}

// Client is the parsed config of an HDFS client.
type Client struct {
	// NameNodes are host:port addresses, the first one first.
	NameNodes []string
	// User is the configured simple-auth user ("" for the default, see
	// User).
	User string
	// Timeout bounds every connection to a NameNode or DataNode.
	Timeout time.Duration
	// NameNodeKey is the key NameNodes came from, for error messages.
	NameNodeKey string
}

// ParseClient reads an HDFS client's keys from cfg and returns every bad
// value (none: nil).
func ParseClient(cfg spi.Config, keys ClientKeys) (Client, []error) {
	var errs []error
	c := Client{NameNodeKey: keys.NameNode}
	nns := cfg.String(keys.NameNode, "")
	if nns == "" {
		errs = append(errs, fmt.Errorf("config key %s is required (the HDFS NameNode's RPC address, e.g. namenode.example.com:8020)", keys.NameNode))
	}
	for _, a := range strings.Split(nns, ",") {
		if strings.TrimSpace(a) == "" {
			continue
		}
		nn, err := NormalizeAddress(a)
		if err != nil {
			errs = append(errs, fmt.Errorf("config key %s: %w", keys.NameNode, err))
			continue
		}
		c.NameNodes = append(c.NameNodes, nn)
	}
	c.User = cfg.String(keys.User, "")
	if strings.ContainsAny(c.User, " \t\n/:") {
		errs = append(errs, fmt.Errorf("config key %s = %q is not a user name", keys.User, c.User))
	}
	var err error
	c.Timeout, err = cfg.Duration(keys.Timeout, 30*time.Second)
	switch {
	case err != nil:
		errs = append(errs, err)
	case c.Timeout <= 0:
		errs = append(errs, fmt.Errorf("config key %s: %s must be positive", keys.Timeout, c.Timeout))
	}
	return c, errs
}

// Dial connects to the client's NameNodes as userName (see User).
func (c Client) Dial(ctx context.Context, userName string) (*hdfs.Client, error) {
	cl, err := Dial(ctx, c.NameNodes, userName, c.Timeout)
	if err != nil {
		return nil, fmt.Errorf("%w (check %s)", err, c.NameNodeKey)
	}
	return cl, nil
}
