"""The reader stage: DPR's extractive reader trained on SQuAD-style or retrieved passages, and answers.

- :func:`train_reader` (``pretriever reader train``) writes READER_DIR;
- :func:`prepare_reader_data` (``pretriever reader prepare``) retrieves and labels passages for a QA set;
- :class:`Reader` reads passages into answers; :func:`answer_questions` retrieves and reads;
- :func:`evaluate_reader` scores end-to-end EM/F1 beside retrieval accuracy.
"""
