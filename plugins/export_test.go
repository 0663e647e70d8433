package plugins

// SetParentDeathSignal turns the Linux parent-death signal of l's plugins
// on or off.
func SetParentDeathSignal(l *Loader, on bool) { l.parentDeathSignal = on }

// Running returns how many plugin processes l tracks.
func Running(l *Loader) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.running)
}

// ToStatus and FromStatusErr expose the error encoding.
var ToStatus = toStatus
