package catalogdir

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"unicode/utf8"
)

// errNotRegular is returned when opening something that is neither a
// regular file nor a directory.
var errNotRegular = errors.New("not a regular file or directory")

// errLinkOutside is returned when opening a link that resolves outside the
// catalog directory.
var errLinkOutside = errors.New("symbolic link points outside the catalog directory")

// FS returns the catalog directory at dir as the index reads it: os.DirFS,
// but showing only what a catalog can hold and the index can read.
//
//   - Directories and regular files are shown.
//   - A symbolic link to a regular file inside dir is shown as that file.
//     Links to directories (not descended into, as fs.WalkDir does not
//     follow them), dangling links, links that resolve outside dir, named
//     pipes, sockets and devices are left out of directory listings, and
//     opening one by name fails: an index build that opened a named pipe
//     would block until something wrote to it, and one that opened a
//     directory as a file would fail the whole catalog.
//   - Names that are not valid UTF-8 are left out of listings: fs.FS cannot
//     name them (fs.ValidPath), so os.DirFS lists them and then fails to
//     open them, which fails the whole catalog.
//
// Files are opened non-blocking, so a regular file replaced by a named pipe
// between listing and opening is refused rather than blocked on. Error
// messages name paths relative to dir, never dir itself.
//
// FS lists dir as it is when asked. The FS of Read lists it as its
// digest's walk saw it instead (the same entries, by the rules above), and
// hashes what is read.
func FS(dir string) fs.FS {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	return &catalogFS{dir: dir, real: real}
}

type catalogFS struct {
	dir  string // as given, to open through
	real string // dir with links resolved, to check link targets against
	// snap, when set, lists the directory and records what is read (see
	// Read).
	snap *snapshot
}

var (
	_ fs.ReadDirFS = (*catalogFS)(nil)
	_ fs.StatFS    = (*catalogFS)(nil)
)

func (c *catalogFS) join(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return filepath.Join(c.dir, filepath.FromSlash(name)), nil
}

// relErr replaces the absolute path in a *fs.PathError with name.
func relErr(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: name, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// check says whether full may be shown: a directory or a regular file, or
// a link that resolves to a regular file inside the catalog directory.
func (c *catalogFS) check(full string, lstat fs.FileInfo) error {
	mode := lstat.Mode()
	if mode&fs.ModeSymlink == 0 {
		if !mode.IsRegular() && !mode.IsDir() {
			return errNotRegular
		}
		return nil
	}
	target, err := filepath.EvalSymlinks(full)
	if err != nil {
		return err
	}
	if !inside(c.real, target) {
		return errLinkOutside
	}
	fi, err := os.Stat(target)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errNotRegular
	}
	return nil
}

func (c *catalogFS) Open(name string) (fs.File, error) {
	full, err := c.join("open", name)
	if err != nil {
		return nil, err
	}
	if name != "." {
		lfi, err := os.Lstat(full)
		if err != nil {
			return nil, relErr("open", name, err)
		}
		if err := c.check(full, lfi); err != nil {
			return nil, relErr("open", name, err)
		}
	}
	f, err := openNonBlocking(full)
	if err != nil {
		return nil, relErr("open", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, relErr("open", name, err)
	}
	switch {
	case fi.Mode().IsRegular():
		if c.snap != nil {
			return c.snap.track(f, name), nil
		}
		return &file{File: f, name: name}, nil
	case fi.IsDir():
		return &dir{file: file{File: f, name: name}, fs: c}, nil
	default:
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
	}
}

// openNonBlocking opens path for reading without blocking on a named pipe
// (or a device) that may have taken the place of a regular file. For regular
// files and directories the flag changes nothing.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

func (c *catalogFS) Stat(name string) (fs.FileInfo, error) {
	full, err := c.join("stat", name)
	if err != nil {
		return nil, err
	}
	if name != "." {
		lfi, err := os.Lstat(full)
		if err != nil {
			return nil, relErr("stat", name, err)
		}
		if err := c.check(full, lfi); err != nil {
			return nil, relErr("stat", name, err)
		}
	}
	fi, err := os.Stat(full)
	if err != nil {
		return nil, relErr("stat", name, err)
	}
	return fi, nil
}

// ReadDir lists name without the entries FS leaves out. Links are listed
// with their own type, as os.ReadDir does, so fs.WalkDir does not descend
// into them.
func (c *catalogFS) ReadDir(name string) ([]fs.DirEntry, error) {
	full, err := c.join("readdir", name)
	if err != nil {
		return nil, err
	}
	if c.snap != nil {
		return c.snap.readDir(name)
	}
	entries, err := os.ReadDir(full)
	if err != nil {
		return nil, relErr("readdir", name, err)
	}
	return slices.DeleteFunc(entries, func(e fs.DirEntry) bool {
		return !c.shown(filepath.Join(full, e.Name()), e)
	}), nil
}

func (c *catalogFS) shown(full string, e fs.DirEntry) bool {
	if !utf8.ValidString(e.Name()) {
		return false
	}
	switch t := e.Type(); {
	case t.IsDir(), t.IsRegular():
		return true
	case t&fs.ModeSymlink != 0:
		lfi, err := e.Info()
		if err != nil {
			return false
		}
		return c.check(full, lfi) == nil
	default:
		return false
	}
}

// file is an open regular file whose errors name it relative to the
// catalog directory.
type file struct {
	*os.File
	name string
}

func (f *file) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	if err != nil && err != io.EOF {
		err = relErr("read", f.name, err)
	}
	return n, err
}

func (f *file) Stat() (fs.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, relErr("stat", f.name, err)
	}
	return fi, nil
}

// dir is an open directory, listed as catalogFS.ReadDir lists it.
type dir struct {
	file
	fs      *catalogFS
	entries []fs.DirEntry
	read    bool
}

func (d *dir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		entries, err := d.fs.ReadDir(d.name)
		if err != nil {
			return nil, err
		}
		d.entries, d.read = entries, true
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n:n]
	d.entries = d.entries[n:]
	return out, nil
}
