"""The teacher's side of the book's exercises (the top layer below the command lines; a student's install carries
none of it: ``python -m cnet_lib student`` builds the students' wheel without this folder).

* :mod:`.pendulum_key`, :mod:`.image_key`, :mod:`.adaptive_key`, :mod:`.keys`: the references and the hidden cases
  of every exercise (drawn per student and per grading run); :mod:`.near_miss_key`: the code of every named near
  miss (the feedback's hint is the one whose values a submission's are);
* :mod:`.public_answers`: the public cases' expected outputs, as data for the book's checks;
* reading a submission, as data and in bounded time and memory: :mod:`.submission_files` (files, zips,
  notebooks, read by a program of their own: nothing followed, nothing blocks, everything capped),
  :mod:`.submissions` (who handed in which chapter, each code cell read once), :mod:`.student_names` (names as
  people write them, and their files);
* :mod:`.source_audit`: what an exercise cell and the imports above it use, read from their source (flags, never
  the barrier); :mod:`.similarity`: how much of a cell is the library's own code for the exercise;
* the sandbox, one per submission and exercise: :mod:`.isolation` (bubblewrap), :mod:`.seccomp` (no namespaces
  inside), :mod:`.cgroups`, :mod:`.limits` and :mod:`.sandbox_memory` (memory, processes, disk, time for the
  sandbox as a whole), :mod:`.absent`, :mod:`.kept`, :mod:`.kept_trace`, :mod:`.stubbing` and
  :mod:`.grading_library` (the students' build with everything the exercise does not need taken out, and torch's
  routines that would do it), :mod:`.sandbox` (the runner inside), :mod:`.sandbox_client` and
  :mod:`.sandbox_process` (the grading process's side), :mod:`.result_schema` (the one way out, read strictly),
  :mod:`.rate_server` (a rate's evaluations counted outside);
* :mod:`.grading`, :mod:`.scoring`, :mod:`.gradebook`, :mod:`.grading_run` and :mod:`.janitor`: a folder of
  submissions graded into a CSV gradebook and one feedback file per student (``python -m cnet_lib grade``);
* :mod:`.answer_key`: the key a class export writes for the teacher (``python -m cnet_lib student``).

Importing this package loads none of them.
"""
