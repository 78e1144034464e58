package memlimit

import (
	"errors"
	"fmt"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrSQLiteStarted says SQLite's memory counting could not be turned on
// because a connection was opened before ApplySQLite.
var ErrSQLiteStarted = errors.New("SQLite was started before its memory limits could be set")

// ApplySQLite sets SQLite's heap limits for the whole process. It must run
// before the process opens its first SQLite connection: the limits need
// SQLite to count its memory (SQLITE_CONFIG_MEMSTATUS), which the driver's
// build leaves off and which SQLite lets be turned on only before it
// starts. Without counting, SQLite takes the limits and ignores them.
// The connection settings of s are for whoever opens connections.
func ApplySQLite(s SQLite) error {
	tls := libc.NewTLS()
	defer tls.Close()
	// sqlite3_config is variadic: its one argument goes in a C va_list.
	args := libc.Xmalloc(tls, types.Size_t(unsafe.Sizeof(uintptr(0))))
	if args == 0 {
		return fmt.Errorf("set SQLite memory limits: out of memory")
	}
	defer libc.Xfree(tls, args)
	switch rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_MEMSTATUS, libc.VaList(args, 1)); rc {
	case sqlite3.SQLITE_OK:
	case sqlite3.SQLITE_MISUSE:
		return fmt.Errorf("set SQLite memory limits: %w", ErrSQLiteStarted)
	default:
		return fmt.Errorf("set SQLite memory limits: sqlite3_config: error %d", rc)
	}
	// The hard limit first: SQLite lowers a soft limit above it to it.
	sqlite3.Xsqlite3_hard_heap_limit64(tls, s.HardHeapLimit)
	sqlite3.Xsqlite3_soft_heap_limit64(tls, s.SoftHeapLimit)
	return nil
}
