#!/usr/bin/python3
"""Makes the multilingual XLM-RoBERTa reranker demo (issue 50) from the project's own multilingual
corpus (resources/demo/corpus/multilingual: 35 short passages in English, German, French,
Spanish, Russian, Greek and Chinese, and 140 questions about them): a Unigram SentencePiece
tokenizer, the datasets in resources/demo/tasks/ (xlmr_rerank_*.txt, retrieval-xlmr/) and the
float cross-encoder xlmr-rerank-float (XLMRobertaForSequenceClassification, num_labels 1).

Nothing is downloaded and no outside weights are used. Development tools only: Debian's
python3-sentencepiece (the tokenizer's training) and python3-torch (the model's); one thread,
fixed seeds. The encoder modules, the safetensors writer and the float64 reference forward are
train_demo.py's and train_tasks.py's; tokenizer.json is written by the converter of the Unigram
test data (tests/data/unigram/convert_spm.py).

  train_xlmr.py tokenizer          train sentencepiece.bpe.model on the corpus (kept in --work)
  train_xlmr.py datasets           write the rerank example and the BEIR folder into tasks/
  train_xlmr.py train              train and save xlmr-rerank-float (with both tokenizer files)
  train_xlmr.py verify-tokenizer CLI   the C++ tokenizer's ids against Python's sentencepiece on every text and pair
  train_xlmr.py verify             float64 reference forward: MRR of the held-out and training questions, the
                                   rerank example's order; writes them into tasks/metrics.json
  train_xlmr.py measure CLI        scalescope-cli rerank and evaluate --retrieval on xlmr-rerank-fp8 against
                                   xlmr-rerank-float; records both in expectations.json (tests/test_demo.cpp)
"""
import argparse
import json
import math
import os
import random
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_demo as demo  # noqa: E402
import train_tasks as tasks  # noqa: E402

sys.path.insert(0, os.path.join(demo.REPO, "tests", "data", "unigram"))
import convert_spm  # noqa: E402  (the tokenizer.json writer of the Unigram test data)

DEMO = demo.DEMO
TASKS = tasks.TASKS
CORPUS = os.path.join(demo.CORPUS, "multilingual")
FLOAT_DIR = os.path.join(DEMO, "xlmr-rerank-float")
RETRIEVAL = os.path.join(TASKS, "retrieval-xlmr")
WORK = "/tmp/scalescope-xlmr-work"
SEED = 20261208

HIDDEN, LAYERS, HEADS, INTERMEDIATE = 64, 3, 4, 256
POSITIONS = 130  # 128 usable: positions start at pad_token_id + 1 = 2
MAX_TOKENS = 128
TARGET_VOCAB = 2400  # an upper bound: hard_vocab_limit off lets the trainer stop below it
PAD, BOS, EOS, UNK = 1, 0, 2, 3

# The rerank example: a held-out Greek question ("What does the lighthouse run on today?") and
# eight passages: the three lighthouses (English, Greek, Chinese), four other Greek passages and a
# Spanish one, the answer fourth. Chosen after training among the held-out questions the float model
# ranks first against all 35 passages (17 of 35, `verify` lists the rate); a first choice, the
# Spanish "¿Adónde corren las crías de tortuga al nacer?", is one it ranks ninth.
RERANK_QUERY = "Με τι λειτουργεί σήμερα ο φάρος;"
RERANK_IDS = ["ml-01", "ml-26", "ml-34", "ml-28", "ml-29", "ml-16", "ml-27", "ml-30"]


def log(message):
    print(time.strftime("%H:%M:%S"), message, flush=True)


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        return [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def load_corpus():
    passages = read_tsv(os.path.join(CORPUS, "passages.tsv"))
    queries = read_tsv(os.path.join(CORPUS, "queries.tsv"))
    known = {p["id"] for p in passages}
    for q in queries:
        if q["passage"] not in known or q["split"] not in ("train", "test"):
            sys.exit("train_xlmr.py: queries.tsv names passage %r with split %r" % (q["passage"], q["split"]))
    return passages, queries


def document_text(passage):
    # As `evaluate --retrieval` joins a BEIR document: title + " " + text.
    return (passage["title"] + " " + passage["text"]).strip()


# ----------------------------------------------------------------------------------------------
# Tokenizer: SentencePiece Unigram, fairseq ids (<s> 0, <pad> 1, </s> 2, <unk> 3, piece i >= 3 at
# i + 1, <mask> last), as XLMRobertaTokenizer maps them.


class Tokenizer:
    def __init__(self, model_path):
        import sentencepiece
        self.sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
        self.size = self.sp.get_piece_size() + 2  # 4 fairseq specials replace 3 pieces, <mask> added
        self.pad_id = PAD
        # What train_demo.mask_tokens needs: the mask id, the specials never masked, the ids a
        # masked token may be replaced by (every piece).
        self.mask_id = self.size - 1
        self.special_ids = (BOS, EOS, PAD)
        self.random_tokens = (UNK + 1, self.mask_id)

    def ids(self, text):
        return [UNK if i == self.sp.unk_id() else i + 1 for i in self.sp.encode(text)]

    def encode(self, text):
        return [BOS] + self.ids(text) + [EOS]

    def encode_pair(self, first, second):
        a, b = self.ids(first), self.ids(second)
        b = b[:max(0, MAX_TOKENS - len(a) - 4)]  # only the passage is cut, as a reranker truncates
        return [BOS] + a + [EOS, EOS] + b + [EOS]


def command_tokenizer(args):
    import sentencepiece
    passages, queries = load_corpus()
    os.makedirs(args.work, exist_ok=True)
    text_path = os.path.join(args.work, "sentences.txt")
    with open(text_path, "w", encoding="utf-8") as f:
        for p in passages:
            f.write(p["title"] + "\n" + p["text"] + "\n")
        for q in queries:
            f.write(q["text"] + "\n")
    # nmt_nfkc (the default) so that the precompiled_charsmap holds real rules; character_coverage 1
    # keeps every Chinese character; one thread keeps the result deterministic.
    sentencepiece.SentencePieceTrainer.train(
        input=text_path, model_prefix=os.path.join(args.work, "m"), model_type="unigram",
        vocab_size=TARGET_VOCAB, hard_vocab_limit=False, character_coverage=1.0, num_threads=1,
        seed_sentencepiece_size=100000, minloglevel=2)
    for name in os.listdir(args.work):  # an encoder pre-trained on another tokenizer's ids is stale
        if name.startswith("mlm-encoder-"):
            os.remove(os.path.join(args.work, name))
    log("sentencepiece: %d pieces" % sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(args.work, "m.model")).get_piece_size())


def write_tokenizer_files(work, directory):
    model = os.path.join(work, "m.model")
    shutil.copyfile(model, os.path.join(directory, "sentencepiece.bpe.model"))
    pieces, charsmap, _ = convert_spm.read_model(model)
    with open(os.path.join(directory, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(convert_spm.tokenizer_json(pieces, charsmap, False), f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    tasks.write_json(os.path.join(directory, "tokenizer_config.json"), {
        "tokenizer_class": "XLMRobertaTokenizer", "model_max_length": MAX_TOKENS,
        "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
        "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>"})


# ----------------------------------------------------------------------------------------------
# Datasets


def command_datasets(args):
    passages, queries = load_corpus()
    by_id = {p["id"]: p for p in passages}
    os.makedirs(os.path.join(RETRIEVAL, "qrels"), exist_ok=True)
    tasks.write_jsonl(os.path.join(RETRIEVAL, "corpus.jsonl"),
                      [{"_id": p["id"], "title": p["title"], "text": p["text"]} for p in passages])
    held_out = [q for q in queries if q["split"] == "test"]
    rows = [{"_id": "mlq-%02d" % (n + 1), "text": q["text"]} for n, q in enumerate(held_out)]
    tasks.write_jsonl(os.path.join(RETRIEVAL, "queries.jsonl"), rows)
    tasks.write_lines(os.path.join(RETRIEVAL, "qrels", "test.tsv"), ["query-id\tcorpus-id\tscore"] +
                      ["%s\t%s\t1" % (row["_id"], q["passage"]) for row, q in zip(rows, held_out)])
    if RERANK_QUERY not in [q["text"] for q in held_out]:
        sys.exit("train_xlmr.py: the rerank example's query is not a held-out question of queries.tsv")
    tasks.write_lines(os.path.join(TASKS, "xlmr_rerank_query.txt"), [RERANK_QUERY])
    tasks.write_lines(os.path.join(TASKS, "xlmr_rerank_passages.txt"), [by_id[i]["text"] for i in RERANK_IDS])
    log("tasks/: retrieval-xlmr with %d passages and %d held-out questions; the rerank example" % (len(passages), len(rows)))


# ----------------------------------------------------------------------------------------------
# Training: an MLM pre-trained from random weights, then a cross-encoder from its encoder, listwise
# (one relevant passage and five others, two of them in its language; softmax over the six logits). Besides the training questions it learns from pieces of the
# passages used as queries (a sentence, or a run of its words), which teaches it to match words of
# the query to words of the passage rather than to remember questions.


def words_of(sentence, chinese):
    return list(sentence) if chinese else sentence.split()


def span_query(rng, passage):
    sentences = [s for s in demo.split_sentences(passage["text"]) if s] or [passage["text"]]
    if passage["lang"] == "zh":
        sentences = [s for s in passage["text"].replace("。", "。\n").splitlines() if s.strip()]
    sentence = rng.choice(sentences)
    chinese = passage["lang"] == "zh"
    tokens = words_of(sentence, chinese)
    if rng.random() < 0.3 or len(tokens) < 4:
        return sentence
    length = max(2, int(len(tokens) * rng.uniform(0.3, 0.7)))
    begin = rng.randrange(0, len(tokens) - length + 1)
    return ("" if chinese else " ").join(tokens[begin:begin + length])


def training_examples(rng, passages, queries):
    """(query text, passage index) for one epoch: every training question twice, as many pieces of passages."""
    index = {p["id"]: i for i, p in enumerate(passages)}
    trained = [(q["text"], index[q["passage"]]) for q in queries if q["split"] == "train"]
    examples = trained * 2 + [(span_query(rng, passages[i % len(passages)]), i % len(passages))
                              for i in range(2 * len(trained))]
    rng.shuffle(examples)
    return examples


def negatives(rng, passages, positive, count):
    """Half of them passages in the positive's language (so that matching the language alone does
    not rank), the others in other languages (so that a pair of two languages is scored sensibly
    too), at random."""
    same = [i for i, p in enumerate(passages) if i != positive and p["lang"] == passages[positive]["lang"]]
    other = [i for i, p in enumerate(passages) if p["lang"] != passages[positive]["lang"]]
    chosen = rng.sample(same, min(len(same), count // 2))
    return chosen + rng.sample(other, count - len(chosen))


def mlm_sequences(rng, tokenizer, passages, queries):
    """What the encoder is pre-trained on: every passage (with and without its title), every
    training question, and pairs as the reranker reads them (a training question or a piece of a
    passage, then that passage), so that masked words can be found in the other text of a pair."""
    index = {p["id"]: i for i, p in enumerate(passages)}
    sequences = [tokenizer.encode(p["text"]) for p in passages] + [tokenizer.encode(document_text(p)) for p in passages]
    trained = [q for q in queries if q["split"] == "train"]
    sequences += [tokenizer.encode(q["text"]) for q in trained]
    for _ in range(3):
        sequences += [tokenizer.encode_pair(q["text"], passages[index[q["passage"]]]["text"]) for q in trained]
        sequences += [tokenizer.encode_pair(span_query(rng, p), p["text"]) for p in passages]
    return sequences


def pretrain_mlm(torch, tokenizer, passages, queries, steps):
    """train_demo.py's MLM recipe (15% masking, AdamW 1e-3, batches of 32) on mlm_sequences."""
    ForMaskedLM, _ = classification_model(torch)
    torch.manual_seed(SEED)
    model = ForMaskedLM(tokenizer.size)
    sequences = mlm_sequences(random.Random(SEED), tokenizer, passages, queries)
    lengths = [len(s) for s in sequences]
    optimizer = tasks.optimizer_for(torch, model, 1e-3)
    generator = torch.Generator().manual_seed(SEED)
    step, started, running = 0, time.time(), None
    log("MLM: %d sequences, %d steps" % (len(sequences), steps))
    model.train()
    while step < steps:
        for batch in demo.length_grouped_batches(torch, len(sequences), lengths, 32, generator):
            if step >= steps:
                break
            ids, attention = demo.pad_batch(torch, [sequences[i] for i in batch], PAD)
            inputs, chosen, labels = demo.mask_tokens(torch, ids, tokenizer, generator)
            for g in optimizer.param_groups:
                g["lr"] = 1e-3 * demo.linear_schedule(step, steps, steps // 20)
            loss = torch.nn.functional.cross_entropy(model(inputs, attention, chosen), labels)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            running = loss.item() if running is None else 0.98 * running + 0.02 * loss.item()
            step += 1
            if step % 200 == 0:
                log("MLM step %d/%d loss %.3f (%.0f s)" % (step, steps, running, time.time() - started))
    return model.encoder_model()


def classification_model(torch):
    demo.HIDDEN, demo.LAYERS, demo.HEADS, demo.INTERMEDIATE = HIDDEN, LAYERS, HEADS, INTERMEDIATE
    tasks.HIDDEN = HIDDEN
    demo.ROBERTA.max_positions = POSITIONS
    ForMaskedLM, _ = demo.build_models(demo.ROBERTA)
    _, ForSequenceClassification, _ = tasks.task_modules(torch)
    return ForMaskedLM, ForSequenceClassification


def command_train(args):
    torch = tasks.start()
    torch.manual_seed(SEED)
    passages, queries = load_corpus()
    tokenizer = Tokenizer(os.path.join(args.work, "m.model"))
    ForMaskedLM, ForSequenceClassification = classification_model(torch)
    encoder = ForMaskedLM(tokenizer.size).encoder_model()
    if args.mlm_steps:
        # The pre-trained encoder is kept in --work, so that the reranker stage can be run again alone.
        saved = os.path.join(args.work, "mlm-encoder-%d.pt" % args.mlm_steps)
        if os.path.exists(saved):
            encoder.load_state_dict(torch.load(saved))
            log("MLM encoder read from %s" % saved)
        else:
            encoder = pretrain_mlm(torch, tokenizer, passages, queries, args.mlm_steps)
            torch.save(encoder.state_dict(), saved)
    torch.manual_seed(SEED + 1)
    model = ForSequenceClassification(encoder, 1)
    rng = random.Random(SEED)
    optimizer = tasks.optimizer_for(torch, model, args.lr)
    group, per_step = args.candidates, 4  # passages per query, queries per step
    steps_per_epoch = math.ceil(len(training_examples(random.Random(0), passages, queries)) / per_step)
    total, step, started = args.epochs * steps_per_epoch, 0, time.time()
    documents = [document_text(p) if k % 2 else p["text"] for k, p in enumerate(passages)]
    log("xlmr reranker: %d pieces, %d passages, %d steps of %d queries x %d passages"
        % (tokenizer.size, len(passages), total, per_step, group))
    model.train()
    for epoch in range(args.epochs):
        examples, epoch_loss, hits = training_examples(rng, passages, queries), 0.0, 0
        for b in range(0, len(examples), per_step):
            sequences = []
            for text, positive in examples[b:b + per_step]:
                others = negatives(rng, passages, positive, group - 1)
                for i in [positive] + others:
                    view = documents[i] if rng.random() < 0.5 else passages[i]["text"]
                    sequences.append(tokenizer.encode_pair(text, view))
            for g in optimizer.param_groups:
                g["lr"] = args.lr * demo.linear_schedule(step, total, total // 10)
            ids, attention = demo.pad_batch(torch, sequences, PAD)
            scores = model(ids, attention).view(-1, group)
            loss = torch.nn.functional.cross_entropy(scores, torch.zeros(scores.shape[0], dtype=torch.long))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            epoch_loss += loss.item() * scores.shape[0]
            hits += (scores.argmax(1) == 0).sum().item()
            step += 1
        log("epoch %d/%d loss %.3f, relevant first %.3f (%.0f s)"
            % (epoch + 1, args.epochs, epoch_loss / len(examples), hits / len(examples), time.time() - started))
    model.eval()
    save(model, tokenizer, args.work)
    log("saved %s (training took %.0f s)" % (FLOAT_DIR, time.time() - started))


def save(model, tokenizer, work):
    tasks.HIDDEN, tasks.LAYERS, tasks.HEADS, tasks.INTERMEDIATE = HIDDEN, LAYERS, HEADS, INTERMEDIATE
    family = demo.Family("xlm-roberta", "roberta", "xlm-roberta", POSITIONS, demo.LAYER_NORM_EPS, 1, PAD,
                         {"pad_token_id": PAD, "bos_token_id": BOS, "eos_token_id": EOS})
    config = tasks.base_config("XLMRobertaForSequenceClassification", family, tokenizer.size)
    config.update({"num_labels": 1, "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}})
    tasks.save_folder(FLOAT_DIR, config, model.state_dict(), work, {})
    write_tokenizer_files(work, FLOAT_DIR)


# ----------------------------------------------------------------------------------------------
# Checks


def all_texts(passages, queries):
    return [p["text"] for p in passages] + [document_text(p) for p in passages] + [q["text"] for q in queries]


def command_verify_tokenizer(args):
    """The C++ tokenizer of the shipped folder (tokenizer.json) against Python's sentencepiece."""
    passages, queries = load_corpus()
    tokenizer = Tokenizer(os.path.join(FLOAT_DIR, "sentencepiece.bpe.model"))
    by_id = {p["id"]: p for p in passages}
    mismatches, texts = 0, all_texts(passages, queries)
    for text in texts:
        got = demo.run_cli(args.cli, ["tokenize", FLOAT_DIR, "--text", text, "--json"])
        if got["input_ids"] != tokenizer.encode(text):
            mismatches += 1
            print("MISMATCH: %r" % text[:70])
    pairs = [(q["text"], by_id[q["passage"]]["text"]) for q in queries[::4]]
    for first, second in pairs:
        got = demo.run_cli(args.cli, ["tokenize", FLOAT_DIR, "--text", first, "--pair", second, "--json"])
        if got["input_ids"] != tokenizer.encode_pair(first, second):
            mismatches += 1
            print("PAIR MISMATCH: %r" % first)
    log("XLM-R tokenizer check: %d texts and %d pairs, %d mismatches" % (len(texts), len(pairs), mismatches))
    if mismatches:
        sys.exit(1)


def reciprocal_rank(scores, relevant):
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return 1.0 / (order.index(relevant) + 1)


def command_verify(args):
    torch = tasks.start()
    torch.use_deterministic_algorithms(False)
    passages, queries = load_corpus()
    tokenizer = Tokenizer(os.path.join(FLOAT_DIR, "sentencepiece.bpe.model"))
    reference = tasks.Reference(torch, FLOAT_DIR)
    reference.prefix = "roberta."  # XLM-RoBERTa's tensors carry RoBERTa's prefix

    def score(query, passage_text):
        return reference.logits(tokenizer.encode_pair(query, passage_text)).item()

    index = {p["id"]: i for i, p in enumerate(passages)}
    documents = [document_text(p) for p in passages]
    result = {}
    for split in ("test", "train"):
        chosen = [q for q in queries if q["split"] == split]
        ranks = [reciprocal_rank([score(q["text"], d) for d in documents], index[q["passage"]]) for q in chosen]
        result["retrieval_" + split] = {"queries": len(chosen), "mrr": sum(ranks) / len(ranks),
                                        "relevant_first": sum(r == 1.0 for r in ranks) / len(ranks)}
        log("%s questions against all %d passages: %s" % (split, len(documents), result["retrieval_" + split]))
    scores = [score(RERANK_QUERY, passages[index[i]]["text"]) for i in RERANK_IDS]
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    result["demo_query"] = RERANK_QUERY
    result["ranking"] = [{"index": i, "title": passages[index[RERANK_IDS[i]]]["title"], "score": scores[i]} for i in order]
    log("rerank example: %s" % ", ".join("%s %.3f" % (r["title"], r["score"]) for r in result["ranking"]))
    path = os.path.join(TASKS, "metrics.json")
    with open(path) as f:
        metrics = json.load(f)
    metrics["xlmr-rerank-float"] = tasks.rounded(result)
    tasks.write_json(path, metrics)


def command_measure(args):
    """The numbers tests/test_demo.cpp holds the demo to, measured with the CLI: the rerank example
    (FP8 against float: Kendall's tau, whether the relevant passage stays first) and MRR@10 of the
    held-out questions against every passage, on both sides."""
    fp8_dir = os.path.join(DEMO, "xlmr-rerank-fp8")
    with open(os.path.join(TASKS, "xlmr_rerank_query.txt"), encoding="utf-8") as f:
        query = f.read().strip()
    ranked = demo.run_cli(args.cli, ["rerank", fp8_dir, "--reference", FLOAT_DIR, "--query", query, "--passages",
                                     os.path.join(TASKS, "xlmr_rerank_passages.txt"), "--json"])
    relevant = RERANK_IDS.index(next(q["passage"] for q in load_corpus()[1] if q["text"] == query))
    if ranked["reference_ranking"][0]["index"] != relevant:
        sys.exit("train_xlmr.py: xlmr-rerank-float does not put the example's relevant passage first")
    evaluated = demo.run_cli(args.cli, ["evaluate", fp8_dir, "--reference", FLOAT_DIR, "--retrieval", RETRIEVAL, "--json"])
    path = os.path.join(DEMO, "expectations.json")
    with open(path) as f:
        expectations = json.load(f)
    checkpoints = expectations["checkpoints"]
    checkpoints["xlmr-rerank-float"] = {
        "architecture": "XLMRobertaForSequenceClassification", "mode": "dequant",
        "retrieval_mrr_at_10": round(evaluated["mrr_at_10"]["reference"], 4),
        "demo_ranking": [r["index"] for r in ranked["reference_ranking"]]}
    checkpoints["xlmr-rerank-fp8"] = {
        "architecture": "XLMRobertaForSequenceClassification", "mode": "fp8",
        "retrieval_mrr_at_10": round(evaluated["mrr_at_10"]["run"], 4),
        "demo_ranking": [r["index"] for r in ranked["ranking"]],
        "demo_kendall_tau": round(ranked["kendall_tau"], 4),
        "demo_relevant_first": ranked["ranking"][0]["index"] == relevant}
    tasks.write_json(path, expectations)
    log("expectations.json: %s; %s" % (checkpoints["xlmr-rerank-float"], checkpoints["xlmr-rerank-fp8"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=WORK, help="where the tokenizer's training files are kept")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("tokenizer")
    sub.add_parser("datasets")
    train = sub.add_parser("train")
    train.add_argument("--epochs", type=int, default=25)
    train.add_argument("--lr", type=float, default=1e-3)
    train.add_argument("--mlm-steps", type=int, default=1500, help="MLM pre-training of the encoder first (0: none)")
    train.add_argument("--candidates", type=int, default=6, help="the relevant passage and this many minus one others")
    check = sub.add_parser("verify-tokenizer")
    check.add_argument("cli")
    sub.add_parser("verify")
    measure = sub.add_parser("measure")
    measure.add_argument("cli")
    args = parser.parse_args()
    {"tokenizer": command_tokenizer, "datasets": command_datasets, "train": command_train,
     "verify-tokenizer": command_verify_tokenizer, "verify": command_verify, "measure": command_measure}[args.command](args)


if __name__ == "__main__":
    main()
