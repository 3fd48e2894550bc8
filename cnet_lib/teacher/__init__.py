"""The teacher's side of the book's exercises (the top layer below the command lines; a student's install
carries none of it: ``python -m cnet_lib student`` builds the students' wheel without this folder).

* :mod:`.pendulum_key`, :mod:`.image_key`, :mod:`.keys`: the references and the hidden cases of every exercise;
* :mod:`.public_answers`: the public cases' expected outputs, as data for the book's checks;
* :mod:`.source_audit`: what an exercise cell uses, read from its source (library code, tampering);
* :mod:`.sandbox` and :mod:`.sandbox_client`: a submission's exercise cells run in a forked process each, with a
  time limit, their outputs carried back as data;
* :mod:`.submissions`, :mod:`.grading`, :mod:`.gradebook`: a folder of submissions graded into a CSV gradebook
  and one feedback file per student (``python -m cnet_lib grade``);
* :mod:`.answer_key`: the key a class export writes for the teacher (``python -m cnet_lib student``).

Importing this package loads none of them.
"""
