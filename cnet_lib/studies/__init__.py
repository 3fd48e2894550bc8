"""Studies planned in advance: each folder holds its analysis plan (committed before its first run), the code
that runs it and the record that ships."""
