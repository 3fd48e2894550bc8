"""The teacher's side of the book's exercises (the top layer below the command lines; a student's install carries
none of it: ``python -m cnet_lib student`` builds the students' wheel without this folder).

* :mod:`.keys`: the answer key: every exercise's reference, hidden cases (drawn per student and grading run) and
  named near misses' code, the public answers the book's checks read, and the class's key file;
* :mod:`.submissions`: who handed in which chapter and each code cell read once, in bounded time, and students'
  names as people write them; :mod:`.submission_files` reads one student's files as data, in a program of its own;
* :mod:`.audit`: what a cell's source uses (flags, never the barrier) and how much of it is the library's own code;
* the sandbox, one per submission and exercise: :mod:`.isolation` (bubblewrap, the system call filter, cgroups and
  limits, memory counted from outside; run as a program, the grading run's janitor), :mod:`.absent` (the students'
  build with everything the exercise does not need taken out, traced by ``kept_trace.py``), :mod:`.sandbox` (the
  grading process's side: several sandboxes at a time, the one way out read strictly, a rate's evaluations
  counted outside) and :mod:`.runner` (the program inside);
* :mod:`.grading`: a folder of submissions graded into a CSV gradebook and one feedback file per student
  (``python -m cnet_lib grade``).

Importing this package loads none of them.
"""
