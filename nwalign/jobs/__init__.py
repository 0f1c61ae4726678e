"""One module or package per command: `pair`, `search/`, `allpairs/`."""
