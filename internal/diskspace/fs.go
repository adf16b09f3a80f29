package diskspace

import "github.com/cockroachdb/pebble/v2/vfs"

// FS wraps pebble's filesystem so that the room its files preallocate is
// asked of the guard: pebble preallocates each new WAL (110% of the
// memtable's size, 17.6 MiB for the node's) and goes on without it when
// the filesystem refuses; ext4 then keeps what it managed to allocate
// before ENOSPC, and a WAL made near the reserve would take all the room
// left. A preallocation the guard has no room for (Guard.Spare) is
// skipped, as pebble skips one that fails, and one it has room for is
// counted as written.
func (g *Guard) FS(inner vfs.FS) vfs.FS { return &guardedFS{FS: inner, g: g} }

type guardedFS struct {
	vfs.FS
	g *Guard
}

// Unwrap returns the filesystem below, as pebble's own wrappers do.
func (fs *guardedFS) Unwrap() vfs.FS { return fs.FS }

func (fs *guardedFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &guardedFile{File: f, g: fs.g}, nil
}

func (fs *guardedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.Create(name, category))
}

func (fs *guardedFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, category, opts...))
}

func (fs *guardedFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname, category))
}

type guardedFile struct {
	vfs.File
	g *Guard
}

// Preallocate preallocates only what the guard has room for.
func (f *guardedFile) Preallocate(offset, length int64) error {
	if length <= 0 || !f.g.Spare(int(length)) {
		return nil
	}
	return f.File.Preallocate(offset, length)
}
