"""The command line (``python -m algorithms``): the entry (``main``), its options
built from the algorithms' parameter tables (``options``) and the data files it
reads and writes (``datafile``)."""
