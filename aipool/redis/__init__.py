"""The pool's Redis: which one (URL, embedded server), its Lua scripts, and what it keeps on disk."""
