// Package memconn provides in-memory, buffered, full-duplex net.Conn pairs
// and a net.Listener of them: the connections between a stream manager
// and the instances that share its process (topology.container.mode
// process-per-container). Each direction has a bounded buffer: a Write
// copies into it and returns as soon as everything fits (blocking while it
// is full, which is back pressure), a Read copies out what is there. No
// system call and no copy beyond the two of a socket, and a blocked side
// parks its goroutine only.
//
// Besides the bytes, each end can Attach a value that the other end's Peer
// returns: the stream manager and its instances use it to exchange frame
// handlers that they call directly, in place of the byte stream, once
// registered.
//
// Deadlines, Close and half-closed peers behave like a Unix socket's: a
// read after the peer closed returns what is buffered, then io.EOF; a
// write to a closed peer fails with io.ErrClosedPipe; an operation past
// its deadline fails with os.ErrDeadlineExceeded (a net.Error whose
// Timeout is true); an operation on a closed end fails with net.ErrClosed.
package memconn
