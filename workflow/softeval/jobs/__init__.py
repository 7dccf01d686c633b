"""One function per workflow job: read the inputs, run the engine, write the artifacts."""
