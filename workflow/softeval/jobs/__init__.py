"""One module per workflow job (a subcommand a rule calls): its flags (add_arguments) and its run
beside the function that reads the inputs, runs the stage and writes the artifacts. `arguments`
holds the flags jobs share; `common`, `generate`, `loglik` and `report` what several jobs use."""
