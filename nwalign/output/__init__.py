"""Records -> text: every format's writer (`formats`), BLAST's number formats (`blastfmt`), files and distance matrices (`files`), allpairs' compiled rows (`scorerows`, `tsvrows`)."""
