# Models built locally from a file: a GGUF checkpoint converted to a float32 Hugging Face directory.


rule convert_gguf:
    input:
        gguf=gguf_file,
    output:
        directory("results/gguf/{model}"),
    log:
        "logs/convert_gguf/{model}.log",
    benchmark:
        BENCHMARKS["convert_gguf"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval convert-gguf --gguf {input.gguf:q} --out {output} 2> {log}"
