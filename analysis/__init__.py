"""The analysis tools: is a stream Claude Code 2.1.220 (or cbc 2.163.0)? How do two
captures differ, and is every difference explained? What changed in a newer CLI?
The modules without ``_cmd`` are pure (frames in, findings out); the ``*_cmd``
modules and ``report``/``progress`` are their command lines."""
