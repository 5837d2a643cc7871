from netcl_lite import capstone

run = capstone.run()
tok, model = run.tokenizer, run.model
prompt = tok.encode_ordinary("Return the")
for temperature, top_p in ((0, None), (0.8, 0.9), (1.2, 0.9)):
    out = model.generate(prompt, 40, temperature=temperature, top_p=top_p, seed=0)
    policy = "greedy" if temperature == 0 else f"top-p {top_p}"
    print(f"--- temperature {temperature} ({policy})")
    print(tok.decode(out.tolist()))
