package api

// StackError is an error that carries its own stack: a traceback of a
// multilang subprocess, or any trace a component has at hand. ReportError
// reports its Stack as the exception's stack (the tracker shows it in
// full) instead of the Go stack of the caller.
type StackError struct {
	Message string
	Stack   string
}

func (e *StackError) Error() string { return e.Message }

// StackTrace returns the carried stack.
func (e *StackError) StackTrace() string { return e.Stack }
