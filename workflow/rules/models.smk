# Models built locally from a file: a GGUF checkpoint converted to a float32 Hugging Face directory.


rule convert_gguf:
    output:
        directory("results/gguf/{model}"),
    params:
        gguf=lambda wildcards: json.dumps(model_entry(config, wildcards.model)["gguf"], sort_keys=True),
        root=ROOT,
    log:
        "logs/convert_gguf/{model}.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval convert-gguf --gguf {params.gguf:q} --root {params.root:q} --out {output} 2> {log}"
