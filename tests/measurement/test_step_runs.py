"""Measured runs as calibrate-step reads them (symcomm.measurement.step_runs): training logs, JSON and CSV files.

The log excerpts are written here by hand in each framework's format (the code that prints them is cited at
each); the expected step times are hand arithmetic on those lines.
"""

import json
import re

import pytest

from symcomm.presets import hardware

from symcomm.base.errors import InputError
from symcomm.measurement.step_runs import read_log, read_runs

#: Megatron-LM's training_log line (NVIDIA/Megatron-LM megatron/training/training.py, training_log:
#: " [date] iteration {:8d}/{:8d} | consumed samples: {:12d} | elapsed time per iteration (ms): {:.1f} | ...";
#: NeMo / Megatron-Bridge prints the same fields, src/megatron/bridge/training/utils/train_utils.py)
MEGATRON = """\
 [2026-01-05 10:00:01.000000] iteration        1/     100 | consumed samples:          256 | elapsed time per iteration (ms): 9000.0 | learning rate: 1.000000E-05 | global batch size:   256 | lm loss: 1.100000E+01 |
 [2026-01-05 10:00:20.000000] iteration       10/     100 | consumed samples:         2560 | elapsed time per iteration (ms): 2100.0 | learning rate: 1.000000E-05 | global batch size:   256 | lm loss: 9.000000E+00 |
some other line the log holds: saving checkpoint, memory report
 [2026-01-05 10:00:41.000000] iteration       20/     100 | consumed samples:         5120 | elapsed time per iteration (ms): 2050.0 | learning rate: 1.000000E-05 | global batch size:   256 | lm loss: 8.000000E+00 |
 [2026-01-05 10:01:01.000000] iteration       30/     100 | consumed samples:         7680 | elapsed time per iteration (ms): 2000.0 | learning rate: 1.000000E-05 | global batch size:   256 | lm loss: 7.500000E+00 |
 [2026-01-05 10:01:24.000000] iteration       40/     100 | consumed samples:        10240 | elapsed time per iteration (ms): 2300.0 | learning rate: 1.000000E-05 | global batch size:   256 | lm loss: 7.200000E+00 |
 [2026-01-05 10:01:44.000000] iteration       50/     100 | consumed samples:        12800 | elapsed time per iteration (ms): 1990.0 | learning rate: 1.000000E-05 | global batch size:   256 | lm loss: 7.000000E+00 |
"""

#: torchtitan's step line with its colour codes (pytorch/torchtitan torchtitan/components/metrics.py,
#: MetricsProcessor.log: "step: {step:2}  loss: ...  grad_norm: ...  memory: ...GiB(...%)  tps: {round(tps):,}
#: tflops: ...  mfu: ...%"; tps = tokens per second per device)
_C = "\x1b[31m", "\x1b[32m", "\x1b[38;5;208m", "\x1b[36m", "\x1b[34m", "\x1b[35m", "\x1b[0m"
TORCHTITAN = "".join(
    f"[rank0]:[titan] 2026-01-05 10:00:{i:02d},000 - root - INFO - {_C[0]}step: {step:2}  {_C[1]}loss: {loss:8.5f}  "
    f"{_C[2]}grad_norm: {1.2:7.4f}  {_C[3]}memory: 61.20GiB(77.27%)  {_C[4]}tps: {tps}  {_C[3]}tflops: 400.12  "
    f"{_C[5]}mfu: 40.45%{_C[6]}\n"
    for i, (step, loss, tps) in enumerate([(1, 12.0, "500"), (10, 9.0, "3,000"), (20, 8.0, "4,000"),
                                           (30, 7.5, "4,100"), (40, 7.2, "3,900")]))


def test_megatron_lines_give_the_median_after_warm_up(tmp_path):
    log = tmp_path / "megatron.log"
    log.write_text(MEGATRON)
    reading = read_log(log, warmup=10)
    # lines 1 (iterations 1) and 10 (2..10) average warm-up iterations: skipped; 20, 30, 40, 50 kept:
    # median of 2050, 2000, 2300, 1990 ms = (2000 + 2050) / 2 = 2025 ms
    assert reading.framework == "megatron" and reading.skipped == 2 and reading.kept == 4
    assert sorted(reading.values) == [1.99, 2.0, 2.05, 2.3]
    from symcomm.measurement.step_runs import _median

    assert _median(reading.values) == pytest.approx(2.025)


def test_lines_naming_an_iteration_without_its_time_are_counted_not_passed_over(tmp_path):
    # an outsider's log: every other Megatron-LM line without its 'elapsed time per iteration' field was dropped
    # unsaid; the four timed lines after warm-up are still the median's, the line without a time counted apart
    log = tmp_path / "megatron.log"
    lines = MEGATRON.splitlines()
    untimed = lines[3].replace("elapsed time per iteration (ms): 2050.0 | ", "")
    log.write_text("\n".join(lines[:3] + [untimed] + lines[4:]) + "\n")
    reading = read_log(log, warmup=10)
    assert reading.unread == 1 and reading.kept == 3 and sorted(reading.values) == [1.99, 2.0, 2.3]
    plain = tmp_path / "plain.log"
    plain.write_text(MEGATRON)
    assert read_log(plain, warmup=10).unread == 0


def test_a_log_resumed_from_a_checkpoint_skips_its_own_warm_up(tmp_path):
    # the same run resumed at iteration 5000 numbers its lines 5001, 5010, ...: its first lines are a fresh process's
    # warm-up as much as lines 1 and 10 are, so the same two are skipped and the same four kept (2025 ms median)
    import re

    from symcomm.measurement.step_runs import _median

    log = tmp_path / "resumed.log"
    log.write_text(re.sub(r"iteration +(\d+)/ +100", lambda m: f"iteration {int(m.group(1)) + 5000:8d}/    5100",
                          MEGATRON))
    reading = read_log(log, warmup=10)
    assert reading.skipped == 2 and reading.kept == 4
    assert _median(reading.values) == pytest.approx(2.025)


def test_torchtitan_lines_with_colour_codes_are_read(tmp_path):
    log = tmp_path / "torchtitan.log"
    log.write_text(TORCHTITAN)
    reading = read_log(log, warmup=10)
    # steps 1 and 10 (2..10) in warm-up; 20, 30, 40 kept: 4,000, 4,100, 3,900 tokens/s per GPU
    assert reading.framework == "torchtitan" and reading.kept == 3 and reading.skipped == 2
    assert sorted(reading.values) == [3900.0, 4000.0, 4100.0]


def test_a_log_with_too_few_lines_after_warm_up_is_refused(tmp_path):
    log = tmp_path / "megatron.log"
    log.write_text(MEGATRON)
    with pytest.raises(InputError, match="2 logged lines after the first 30 iterations.*at least 3"):
        read_log(log, warmup=30)          # only 40 (31..40) and 50 remain


def test_a_log_without_training_lines_or_out_of_order_is_refused(tmp_path):
    log = tmp_path / "other.log"
    log.write_text("epoch 1 loss 3.2\n")
    with pytest.raises(InputError, match="no Megatron-LM/NeMo line"):
        read_log(log)
    swapped = MEGATRON.splitlines()
    log.write_text("\n".join([swapped[3], swapped[0]] + swapped[4:]) + "\n")
    with pytest.raises(InputError, match="iteration 1 follows 20"):
        read_log(log)


def test_a_long_line_of_iteration_heads_is_read_in_one_pass(tmp_path):
    # an outsider's log of one 300 kB line of "iteration 1/2 |" took 69 s to refuse: the pattern with .*? between the
    # iteration and its figure was tried again from each of the line's 20,000 heads; read in two linear searches, a
    # 1.5 MB line is refused (no figure after any head) as any log without a training line is
    log = tmp_path / "long.log"
    log.write_text("iteration 1/2 |" * 100_000 + "\n")
    with pytest.raises(InputError, match="no Megatron-LM/NeMo line"):
        read_log(log)
    # a head without its figure, then a whole line: the figure is the first after the line's first head
    log.write_text("".join(line + "\n" for line in ["iteration 3/9 | no time here"] + MEGATRON.splitlines()))
    assert read_log(log, warmup=10).kept == 4


def test_a_logged_time_of_zero_is_refused_naming_its_iteration(tmp_path):
    # an outsider's line logging 0.0 ms was refused as "a logged time or throughput is not a positive number", no line
    # named; the NaN case names its iteration, and so does this one
    log = tmp_path / "zero.log"
    log.write_text(MEGATRON.replace("(ms): 2000.0", "(ms): 0.0"))
    with pytest.raises(InputError, match="iteration 30 logs elapsed time per iteration .ms. '0.0', not a positive"):
        read_log(log, warmup=10)


def test_a_log_whose_step_time_changes_is_said(tmp_path):
    # 10 lines at 7.0 s then 20 at 10.5 s (one logging interval each, after 10 warm-up lines of 1 iteration): the
    # median 10.5 s is fitted, and the spread said (middle half 7.0 to 10.5 s, far over 10 % of the median)
    from symcomm.base import notes

    lines = [f" iteration {i:8d}/     100 | elapsed time per iteration (ms): {ms:.1f} | global batch size:   256 |"
             for i, ms in enumerate([9000.0] * 10 + [7000.0] * 10 + [10500.0] * 20, start=1)]
    (tmp_path / "shift.log").write_text("\n".join(lines) + "\n")
    runs = [{"id": "x", "model": "llama3-8b", "words": LLAMA8, "log": "shift.log"}]
    with notes.collected() as said:
        found, read_as = read_runs(_runs_file(tmp_path, runs), "h100")
    assert found[0].measured_s == pytest.approx(10.5)
    assert any("spread from 7 to 10.5 s, their middle half 7 to 10.5 s around the median 10.5" in n.text for n in said)
    # the steady log above: its middle half within 10 % of its median, nothing said
    (tmp_path / "megatron.log").write_text(MEGATRON)
    with notes.collected() as said:
        read_runs(_runs_file(tmp_path, [{**runs[0], "log": "megatron.log"}]), "h100")
    assert not any("spread from" in n.text for n in said)


def _runs_file(tmp_path, runs, name="runs.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"runs": runs}))
    return path


LLAMA8 = "t=1 p=1 d=32 c=1 b=256 m=8 s=8192 flash=1"


def test_each_measurement_becomes_seconds_per_step(tmp_path):
    (tmp_path / "megatron.log").write_text(MEGATRON)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "titan.log").write_text(TORCHTITAN)
    runs = [{"id": "a", "model": "llama3-8b", "words": LLAMA8, "step_time_s": 16.0},
            {"id": "b", "model": "llama3-8b", "words": LLAMA8 + " recompute=full", "tokens_per_s": 131072},
            {"id": "c", "model": "llama3-8b", "words": LLAMA8 + " recompute=selective", "tokens_per_s_per_gpu": 4096},
            {"id": "d", "model": "llama3-8b", "words": LLAMA8 + " zero=0", "log": "megatron.log"},
            {"id": "e", "model": "llama3-8b", "words": LLAMA8.split() + ["zero=3", "framework=fsdp2"], "log": "logs/titan.log",
             "warmup": 10}]
    found, how = read_runs(_runs_file(tmp_path, runs), "h100")
    seconds = {r.id: r.measured_s for r in found}
    # b·s = 256 · 8192 = 2,097,152 tokens per step on d·t·p·c = 32 GPUs
    assert seconds["a"] == 16.0
    assert seconds["b"] == pytest.approx(2097152 / 131072)             # 16 s
    assert seconds["c"] == pytest.approx(2097152 / (4096 * 32))        # 16 s
    assert seconds["d"] == pytest.approx(2.025)                        # the median above
    assert seconds["e"] == pytest.approx(2097152 / (4000 * 32))        # 16.384 s
    assert "median of 3 logged lines after 10 warm-up iterations" in how["e"]
    # the runs are bound as eval hybrid binds the words: the model's shape, the hardware's constants
    assert found[0].inputs.values["h"] == 4096
    assert found[0].inputs.values["eta"] == dict(hardware("h100").step_time)["eta"]


def test_a_csv_file_reads_as_the_json_file(tmp_path):
    runs = [{"id": f"r{i}", "model": "llama3-8b", "words": f"t={t} p=1 d={32 // t} c=1 b=256 m=8 s=8192",
             "step_time_s": 10.0 + i} for i, t in enumerate((1, 2, 4))]
    csv = tmp_path / "runs.csv"
    csv.write_text("id,model,words,step_time_s\n" + "".join(f"{r['id']},{r['model']},{r['words']},{r['step_time_s']}\n"
                                                            for r in runs))
    from_json, _ = read_runs(_runs_file(tmp_path, runs), "h100")
    from_csv, _ = read_runs(csv, "h100")
    assert [(r.id, r.measured_s, r.inputs.values, r.inputs.options) for r in from_csv] == \
           [(r.id, r.measured_s, r.inputs.values, r.inputs.options) for r in from_json]


@pytest.mark.parametrize("row, message", [
    ({"id": "x", "model": "llama3-8b", "words": LLAMA8}, "exactly one of step_time_s"),
    ({"id": "x", "model": "llama3-8b", "words": LLAMA8, "step_time_s": 1.0, "tokens_per_s": 5.0}, "exactly one of"),
    ({"id": "x", "model": "llama3-8b", "words": LLAMA8, "step_time_s": -1.0}, "step_time_s"),
    ({"id": "x", "model": "llama3-8b", "words": LLAMA8, "step_time_s": 1.0, "note": "?"}, "note"),
    ({"id": "x", "model": "llama3-8b", "words": "t=1 p=5 d=32 c=1 b=256 m=8", "step_time_s": 1.0}, "run .x.: .*p=5"),
    ({"id": "x", "model": "no-such-model", "words": LLAMA8, "step_time_s": 1.0}, "no-such-model"),
    # no model field: the missing sizes are the model's, and the field that gives them is named (an outsider's finding)
    ({"id": "x", "words": LLAMA8, "step_time_s": 1.0}, "run 'x': missing .*it has no field 'model' or 'model_config'"),
])
def test_bad_runs_are_refused_naming_the_run_or_field(tmp_path, row, message):
    with pytest.raises(InputError, match=message):
        read_runs(_runs_file(tmp_path, [row]), "h100")


def test_a_missing_log_is_refused_naming_its_run(tmp_path):
    # the log's own complaint said of the run that names it (an outsider's RUNS file named the log but not the run)
    row = {"id": "nightly-3", "model": "llama3-8b", "words": LLAMA8, "log": "nosuch.log"}
    with pytest.raises(InputError, match="run 'nightly-3': log '.*nosuch.log': no such file"):
        read_runs(_runs_file(tmp_path, [row]), "h100")


def test_bad_csv_is_refused(tmp_path):
    csv = tmp_path / "runs.csv"
    csv.write_text("id,model,words,step_time_s,colour\nr1,llama3-8b,t=1 p=1 d=8 c=1 b=64 m=8,1.0,red\n")
    with pytest.raises(InputError, match="unknown CSV column 'colour'"):
        read_runs(csv, "h100")
    csv.write_text("id,model,words,step_time_s\nr1,llama3-8b,t=1 p=1 d=8 c=1 b=64 m=8,1e400\n")
    with pytest.raises(InputError, match="line 2: step_time_s"):
        read_runs(csv, "h100")
    # the line said once (an outsider saw it twice in one message)
    csv.write_text('id,model,words,step_time_s\nr1,llama3-8b,t=1 p=1 d=8 c=1 b=64 m=8,"8,8"\n')
    with pytest.raises(InputError) as refused:
        read_runs(csv, "h100")
    assert str(refused.value).count("line 2") == 1 and "step_time_s='8,8' is not a number" in str(refused.value)
    # a short row is refused as the JSON schema refuses a missing field, not read as empty cells
    csv.write_text("id,model,words,step_time_s\nr1,llama3-8b\n")
    with pytest.raises(InputError, match="line 2: 2 cells where the header has 4 columns \\(none for 'words'\\)"):
        read_runs(csv, "h100")


def test_a_csv_column_given_twice_is_refused_and_a_byte_order_mark_is_no_field(tmp_path):
    # csv.DictReader would keep the second step_time_s silently (the JSON reader refuses a key given twice)
    csv = tmp_path / "runs.csv"
    csv.write_text("id,model,words,step_time_s,step_time_s\nr1,llama3-8b,t=1 p=1 d=8 c=1 b=64 m=8,1.0,1.5\n")
    with pytest.raises(InputError, match="the CSV column 'step_time_s' is given twice"):
        read_runs(csv, "h100")
    # a UTF-8 byte-order mark before the header (Excel's "CSV UTF-8") or the JSON: read as the same file without it
    runs = [{"id": f"r{i}", "model": "llama3-8b", "words": f"t={t} p=1 d={32 // t} c=1 b=256 m=8 s=8192",
             "step_time_s": 10.0 + i} for i, t in enumerate((1, 2, 4))]
    plain = _runs_file(tmp_path, runs)
    marked = tmp_path / "marked.json"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    csv.write_bytes(b"\xef\xbb\xbf" + ("id,model,words,step_time_s\n" + "".join(
        f"{r['id']},{r['model']},{r['words']},{r['step_time_s']}\n" for r in runs)).encode())
    want = [(r.id, r.measured_s) for r in read_runs(plain, "h100")[0]]
    assert [(r.id, r.measured_s) for r in read_runs(marked, "h100")[0]] == want
    assert [(r.id, r.measured_s) for r in read_runs(csv, "h100")[0]] == want


def test_a_model_config_reads_as_eval_reads_it(tmp_path):
    # Llama 3 8B's shape as its Hugging Face config.json states it (meta-llama/Meta-Llama-3-8B): the same
    # numbers as the llama3-8b preset's
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
        "max_position_embeddings": 8192, "tie_word_embeddings": False}))
    runs = [{"id": "preset", "model": "llama3-8b", "words": LLAMA8, "step_time_s": 16.0},
            {"id": "config", "model_config": "models/config.json", "words": LLAMA8 + " recompute=full",
             "step_time_s": 16.0}]
    found, _ = read_runs(_runs_file(tmp_path, runs), "h100")
    for key in ("h", "L", "a", "h_kv", "F", "V", "Phi"):
        assert found[1].inputs.values[key] == found[0].inputs.values[key], key


def test_a_name_no_run_reads_is_said_once_for_the_file(tmp_path):
    # e (the expert-parallel size) means nothing to a dense model's step: eval hybrid says so beside each run's own
    # setting; a file of runs says it once, counting the runs that typed it (here 3 of the 4, across 3 settings)
    from symcomm.base import notes

    runs = [{"id": f"r{i}", "model": "llama3-8b", "words": LLAMA8 + extra, "step_time_s": 16.0}
            for i, extra in enumerate((" e=1", " e=1 recompute=full", " e=1 recompute=selective", ""))]
    with notes.collected() as said:
        read_runs(_runs_file(tmp_path, runs), "h100")
    unread = [n.text for n in said if "not read" in n.text or "not used" in n.text]
    assert unread == ["e typed but not read by the step model in 3 of the 4 runs (r0, r1, r2)"], unread


def test_a_log_priced_as_another_trainer_s_framework_is_refused(tmp_path):
    # torchtitan's lines come from its FSDP2 (per-parameter FSDP since pytorch/torchtitan 83c879f1, 2024-03-28, before
    # the name), Megatron's from Megatron-Core: a run priced as another framework would be fitted and recorded as it
    (tmp_path / "titan.log").write_text(TORCHTITAN)
    (tmp_path / "megatron.log").write_text(MEGATRON)
    for words, log, framework in ((LLAMA8, "titan.log", "megatron"),
                                  (LLAMA8 + " zero=3 framework=fsdp2", "megatron.log", "fsdp2")):
        runs = [{"id": "x", "model": "llama3-8b", "words": words, "log": log, "warmup": 10}]
        with pytest.raises(InputError, match=f"its log is .*'s but its words price framework={framework}"):
            read_runs(_runs_file(tmp_path, runs), "h100")


def test_a_log_is_held_to_its_runs_batch_and_read_by_one_run(tmp_path):
    # an outsider's Megatron log printing 'global batch size: 48' was fitted as a run of b=64, and one log given to two
    # runs was fitted twice; the log above prints 256, the batch LLAMA8 types
    (tmp_path / "megatron.log").write_text(MEGATRON)
    runs = [{"id": "x", "model": "llama3-8b", "words": LLAMA8.replace("b=256", "b=512"), "log": "megatron.log"}]
    with pytest.raises(InputError, match="its log.s lines print global batch size 256, its words b=512"):
        read_runs(_runs_file(tmp_path, runs), "h100")
    runs = [{"id": "x", "model": "llama3-8b", "words": LLAMA8, "log": "megatron.log"},
            {"id": "y", "model": "llama3-8b", "words": LLAMA8 + " zero=0", "log": "./megatron.log"}]
    with pytest.raises(InputError, match="run 'y': its log './megatron.log' is run 'x''s too: one log measures one run"):
        read_runs(_runs_file(tmp_path, runs), "h100")


def test_a_framework_label_naming_another_trainer_and_an_id_with_a_control_character_are_refused(tmp_path):
    # an outsider labelled every run "framework": "torchtitan" and read 'framework torchtitan: 12 runs' in the report,
    # each priced as Megatron; an id holding ESC and a newline broke the report's table
    runs = [{"id": "x", "model": "llama3-8b", "words": LLAMA8, "step_time_s": 16.0, "framework": "torchtitan"}]
    with pytest.raises(InputError, match="its field 'framework' says torchtitan, its words price framework=megatron: "
                                         "give framework=fsdp2 in its words"):
        read_runs(_runs_file(tmp_path, runs), "h100")
    runs = [{"id": "x\x1b[31m\n", "model": "llama3-8b", "words": LLAMA8, "step_time_s": 16.0}]
    with pytest.raises(InputError, match="holds a control character"):
        read_runs(_runs_file(tmp_path, runs), "h100")
    # a label of its own (a cluster, a team) is the report's to group by, whatever the words price
    runs = [{"id": "x", "model": "llama3-8b", "words": LLAMA8, "step_time_s": 16.0, "framework": "our-stack-v2"}]
    assert read_runs(_runs_file(tmp_path, runs), "h100")[0][0].framework == "our-stack-v2"


def _megatron_line(iteration: int, ms: str, batch: int) -> str:
    # the MEGATRON excerpt's line, its time and global batch size given
    return (f" [2026-01-05 10:00:00.000000] iteration {iteration:8d}/     100 | consumed samples: {iteration * batch:12d} | "
            f"elapsed time per iteration (ms): {ms} | learning rate: 1.000000E-05 | global batch size: {batch:5d} | "
            "lm loss: 7.000000E+00 |\n")


def test_a_ramped_up_batch_is_timed_on_the_lines_at_the_run_s_batch(tmp_path):
    # Megatron-LM's --rampup-batch-size: an outsider's log printed 384 for iterations 1-30 (4354.5 ms) and 512 after
    # (5806 ms); the run, b = 512, was timed at the median of every line, 4.3545 s (the 384 lines outnumber the rest)
    lines = [_megatron_line(i, "4354.5", 384) for i in range(1, 31)]
    lines += [_megatron_line(i, ms, 512) for i, ms in zip(range(31, 41), ("5800.0", "5806.0", "5812.0") * 4)]
    (tmp_path / "ramp.log").write_text("".join(lines))
    runs = [{"id": "x", "model": "llama3-8b", "words": LLAMA8.replace("b=256", "b=512"), "log": "ramp.log"}]
    got, read_as = read_runs(_runs_file(tmp_path, runs), "h100")
    # the ten lines at 512 (none in the 10 warm-up iterations): 5800, 5806, 5812, 5800, ... -> median 5806 ms
    assert got[0].measured_s == pytest.approx(5.806)
    assert "20 lines at another global batch size (384, a ramp-up) left out" in read_as["x"]
    # a run of the ramp's smaller batch is timed on its own lines
    runs = [{"id": "x", "model": "llama3-8b", "words": LLAMA8.replace("b=256", "b=384").replace("m=8", "m=4"),
             "log": "ramp.log"}]
    assert read_runs(_runs_file(tmp_path, runs), "h100")[0][0].measured_s == pytest.approx(4.3545)


@pytest.mark.parametrize("figure", ["nan", "1e+30", "-", "inf"])
def test_a_logged_time_that_is_no_number_refuses_the_log(tmp_path, figure):
    # an outsider's log with one 'nan' line, and one with 1e+30 ms, were each read without a word: the nan line passed
    # over, the 1e+30 one as its leading digit, 1 ms, both then hidden by the median
    lines = [_megatron_line(i, "2000.0", 256) for i in range(10, 70, 10)]
    lines[3] = _megatron_line(40, figure, 256)
    (tmp_path / "bad.log").write_text("".join(lines))
    with pytest.raises(InputError, match=f"iteration 40 logs elapsed time per iteration \\(ms\\) '{re.escape(figure)}', "
                                         "not a number"):
        read_log(tmp_path / "bad.log", warmup=10)


def test_every_rank_s_lines_in_one_log_are_told_apart_from_an_out_of_order_log(tmp_path):
    (tmp_path / "ranks.log").write_text(TORCHTITAN + TORCHTITAN.replace("[rank0]", "[rank1]"))
    text = "".join(a + b for a, b in zip(TORCHTITAN.splitlines(True), TORCHTITAN.replace("[rank0]", "[rank1]")
                                         .splitlines(True)))
    (tmp_path / "ranks.log").write_text(text)
    with pytest.raises(InputError, match="iteration 1 is logged twice: several ranks' lines\\? keep one rank's"):
        read_log(tmp_path / "ranks.log", warmup=10)


def test_a_warm_up_given_to_a_run_without_a_log_is_refused(tmp_path):
    runs = [{"id": "x", "model": "llama3-8b", "words": LLAMA8, "step_time_s": 16.0, "warmup": 10}]
    with pytest.raises(InputError, match="warmup counts a log's first iterations; this run gives step_time_s"):
        read_runs(_runs_file(tmp_path, runs), "h100")


#: NeMo 2.0's progress line (NVIDIA/NeMo nemo/lightning/pytorch/callbacks/progress_printer.py at 8cfedd7,
#: ProgressPrinter: "{Training} epoch {E}, iteration {n-1}/{total-1}" then " | {metric}: {value}" per logged metric,
#: values to 4 significant digits; 'train_step_timing in s' the mean step time over the logging interval)
NEMO2 = "".join(
    f"Training epoch 0, iteration {n - 1}/99 | lr: 1.5e-05 | global_batch_size: 256 | global_step: {n - 1} | "
    f"reduced_train_loss: 9.5 | train_step_timing in s: {seconds} | consumed_samples: {256 * n}\n"
    for n, seconds in ((10, "21.31"), (20, "16.02"), (30, "16.1"), (40, "15.98"), (50, "16.3")))


def test_nemo_2_lines_give_the_median_after_warm_up(tmp_path):
    (tmp_path / "nemo.log").write_text(NEMO2)
    reading = read_log(tmp_path / "nemo.log", warmup=10)
    # 'iteration 9' is the line after 10 steps (counted from 0), the mean of steps 1-10: warm-up, skipped; the lines
    # after 20, 30, 40, 50 steps kept, already in seconds
    assert reading.framework == "nemo" and reading.skipped == 1 and reading.kept == 4
    assert sorted(reading.values) == [15.98, 16.02, 16.1, 16.3]
    runs = [{"id": "x", "model": "llama3-8b", "words": LLAMA8, "log": "nemo.log"}]
    got, read_as = read_runs(_runs_file(tmp_path, runs), "h100")
    # median of 15.98, 16.02, 16.1, 16.3 = (16.02 + 16.1) / 2 s
    assert got[0].measured_s == pytest.approx(16.06)
    # a torchtitan-priced run of it is refused: its lines are Megatron-Core's
    runs = [{"id": "x", "model": "llama3-8b", "words": LLAMA8 + " zero=3 framework=fsdp2", "log": "nemo.log"}]
    with pytest.raises(InputError, match="its log is nemo's but its words price framework=fsdp2"):
        read_runs(_runs_file(tmp_path, runs), "h100")
