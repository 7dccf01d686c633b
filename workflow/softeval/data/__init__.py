"""Task files and their data: task definitions, answers, dataset fields and sources, the
synthetic world, and the writer of prepared splits. The lowest stage: no model code."""
