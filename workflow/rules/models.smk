# Models built locally from a file: a GGUF checkpoint converted to a float32 Hugging Face directory.


rule convert_gguf:
    input:
        gguf=lambda wildcards: PLAN.gguf_file(wildcards.model),
    output:
        directory(gguf_model_dir()),
    log:
        "logs/convert_gguf/{model}.log",
    benchmark:
        benchmark_pattern("convert_gguf")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval convert-gguf --gguf {input.gguf:q} --out {output} 2> {log}"
