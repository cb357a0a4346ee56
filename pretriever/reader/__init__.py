"""The reader stage: DPR's extractive reader trained on SQuAD-style or retrieved passages, and answers.

- :func:`pretriever.reader.train.run` (``pretriever reader train``) writes READER_DIR;
- :func:`pretriever.reader.prepare.run` (``pretriever reader prepare``) retrieves and
  labels passages for a QA set as DPR reader JSON;
- :class:`pretriever.reader.predict.Reader` reads passages into answers;
  :func:`pretriever.reader.prepare.answer_questions` retrieves and reads (``pretriever answer``);
- :func:`pretriever.reader.evaluate.evaluate_reader` scores end-to-end EM/F1 beside retrieval accuracy, and
  :func:`pretriever.reader.evaluate.read_behind` does it behind several systems (``pretriever evaluate --reader``,
  whose stage sits one layer above this one and calls it).

Submodules are imported by path: each pulls in torch or the index stage only when used.
"""
