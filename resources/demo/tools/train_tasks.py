#!/usr/bin/python3
"""Makes the task demos of issue 49 from the project's own corpus: the datasets in
resources/demo/tasks/ and three small float checkpoints, a sentence embedder (embed-float), a
cross-encoder reranker (rerank-float) and a topic classifier (classify-float).

Nothing is downloaded and no outside weights are used: the vocabularies are the ones of qa-float
(RoBERTa byte-level BPE) and bert-qa-float (BERT uncased WordPiece), the encoders are pre-trained
here with masked language modelling on resources/demo/corpus (train_demo.py's MLM, at the smaller
sizes below) and then trained for their task. PyTorch only (Debian: python3-torch), one thread,
fixed seeds.

  train_tasks.py datasets          write resources/demo/tasks/ (texts, STS, BEIR folder, classification, rerank example)
  train_tasks.py train [--stage S] pre-train the two MLMs (kept in --work, not shipped), then train and save
                                   embed-float, rerank-float, classify-float (S: all, mlm, embed, rerank, classify)
  train_tasks.py verify            an independent forward (plain torch functions on the saved safetensors, not the
                                   training modules) measures the three models on the datasets; writes tasks/metrics.json
  train_tasks.py choose-defect     emulates the static per-tensor FP8 reranker (rerank-fp8-static) in float64 and lists,
                                   per Linear, whether an input scale 64x too small changes the demo query's ranking
"""
import argparse
import json
import math
import os
import random
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_demo as demo  # noqa: E402  (the tokenizers, the encoder modules, the MLM and the safetensors writer)

DEMO = demo.DEMO
TASKS = os.path.join(DEMO, "tasks")
SEED = 20261207

# Sizes of the task demos: smaller than the QA demos so that the three float folders, their five
# FP8 copies (embed, rerank, rerank-static, rerank-defect, classify) and a later XLM-RoBERTa demo fit
# the 40 MB that all demos may take. The word embeddings (vocabulary x hidden) dominate and stay
# float in the FP8 copies, so the hidden size is what shrinks.
HIDDEN = 64
LAYERS = 3
HEADS = 4
INTERMEDIATE = 256
ROBERTA_POSITIONS = 258  # 256 usable: RoBERTa's positions start at pad_token_id + 1 = 2
BERT_POSITIONS = 256
MAX_SEQ_LENGTH = 256

# One topic per passage, assigned by hand (the corpus's own titles, in corpus order).
LABELS = ["place", "nature", "technology", "food", "science"]
TOPICS = {
    "place": ["Marrowby", "The river Velda", "Tessaly Island", "Orrin Vale", "The Brannock Observatory",
              "The Kestrel Pass", "Corran Weir", "The Grey Sea", "Saltby", "Dunmere", "The Lantern Fair",
              "Pell Forest", "The Harrow Hills", "The Marrowby boatyards", "The Saltby lifeboat"],
    "nature": ["Honey bees", "Owls", "Foxes", "Beavers", "Hedgehogs", "Whales", "Mushrooms"],
    "technology": ["The steam engine", "The bicycle", "Clocks", "Windmills", "The printing press", "Glass",
                   "The lever", "Pulleys", "Canals", "The telephone", "The compass", "Looms", "Bridges"],
    "food": ["Baking bread", "Rice", "Tea", "Sourdough", "Cheese making", "Soup", "Apples", "Pancakes"],
    "science": ["The Moon", "Volcanoes", "The Sun", "Lightning", "Planets", "Comets", "Rainbows", "Stars",
                "Tides", "Sound", "Gravity", "Clouds"],
}

# STS grade 5: questions of the corpus and a paraphrase of each, written for this file.
PARAPHRASES = [
    ("When was Marrowby founded?", "In what year was the town of Marrowby founded?"),
    ("Where does the Velda rise?", "Where is the source of the river Velda?"),
    ("How long does the Moon take to go around the Earth?", "How many days does the Moon need to orbit the Earth?"),
    ("What gas does the yeast give off?", "Which gas is given off by the yeast in the dough?"),
    ("Who built the first pendulum clock?", "Who made the first clock with a pendulum?"),
    ("What are the male bees called?", "What is the name of the male bees in a colony?"),
    ("What is the fixed point of a lever called?", "What is the name of the point that a lever turns about?"),
    ("How fast does sound travel in air?", "What is the speed of sound in air?"),
    ("What is a female fox called?", "What name is given to a female fox?"),
    ("When did tea reach Europe?", "When did tea first arrive in Europe?"),
    ("How high is Black Tor?", "What is the height of Black Tor?"),
    ("What are young hedgehogs called?", "What is the name for young hedgehogs?"),
]

# The rerank example of the workbench: a held-out question and eight passages about the towns of the
# Velda country, most of which give a year, in an order that does not put the answer first.
RERANK_QUERY = "When was Marrowby founded?"
RERANK_TITLES = ["The Lantern Fair", "The river Velda", "The Marrowby boatyards", "Marrowby", "Saltby",
                 "The Brannock Observatory", "Dunmere", "Corran Weir"]

# The --texts example: a question and the first sentence of two passages of each topic.
TEXT_TITLES = ["Marrowby", "Saltby", "Honey bees", "Owls", "The steam engine", "The telephone",
               "Baking bread", "Tea", "The Moon", "Volcanoes"]

QUERY_PROMPT = "query: "
PASSAGE_PROMPT = "passage: "


def log(message):
    print(time.strftime("%H:%M:%S"), message, flush=True)


# ----------------------------------------------------------------------------------------------
# The corpus as the tasks see it


def corpus():
    """Returns [{"index", "id", "title", "text", "label", "sentences", "questions": [(id, q, answer, start, global index)]}]."""
    with open(os.path.join(demo.CORPUS, "questions.json")) as f:
        squad = json.load(f)
    topic_of = {title: label for label, titles in TOPICS.items() for title in titles}
    passages, number = [], 0
    for index, article in enumerate(squad["data"]):
        if article["title"] not in topic_of:
            sys.exit("train_tasks.py: the passage %r has no topic in TOPICS." % article["title"])
        paragraph = article["paragraphs"][0]
        questions = []
        for qa in paragraph["qas"]:
            answer = qa["answers"][0]
            questions.append((qa["id"], qa["question"], answer["text"], answer["answer_start"], number))
            number += 1
        passages.append({"index": index, "id": "demo-%02d" % (index + 1), "title": article["title"],
                         "text": paragraph["context"], "label": topic_of[article["title"]],
                         "sentences": demo.split_sentences(paragraph["context"]), "questions": questions})
    if len(topic_of) != len(passages):
        sys.exit("train_tasks.py: TOPICS names %d passages, the corpus has %d." % (len(topic_of), len(passages)))
    return passages


def held_out_question(number):
    # The calibration lab's split (split_calibration.py): odd-numbered questions are the evaluation half.
    return number % 2 == 1


def held_out_sentence(position):
    return position % 4 == 3


def sentence_spans(passage):
    spans, cursor = [], 0
    for sentence in passage["sentences"]:
        start = passage["text"].index(sentence, cursor)
        spans.append((start, start + len(sentence)))
        cursor = start + len(sentence)
    return spans


def document_text(passage):
    # How `evaluate --retrieval` joins a BEIR document: title + " " + text, stripped.
    return (passage["title"] + " " + passage["text"]).strip()


# ----------------------------------------------------------------------------------------------
# Datasets


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))


def write_jsonl(path, rows):
    write_lines(path, [json.dumps(row, ensure_ascii=False) for row in rows])


def secondary_relevance(passages, passage, answer, question):
    """Grade-1 documents of a question: other passages that hold its answer (as a phrase) and one of
    the names it asks about (a capitalised word of the question other than its first word)."""
    names = [w.strip("?.,'s") for w in question.split()[1:] if w[:1].isupper()]
    names = [n for n in names if len(n) > 2]
    found = []
    for other in passages:
        if other is passage or not names:
            continue
        if (" " + answer.lower() + " ") in (" " + other["text"].lower().replace(".", " ").replace(",", " ") + " ") and \
                any(n in other["text"] for n in names):
            found.append(other)
    return found


def command_datasets(args):
    passages = corpus()
    os.makedirs(os.path.join(TASKS, "retrieval", "qrels"), exist_ok=True)
    by_title = {p["title"]: p for p in passages}
    rng = random.Random(SEED)

    # --texts: grouped by topic so that the similarity heat map shows blocks.
    texts = []
    for title in TEXT_TITLES:
        p = by_title[title]
        texts += [p["questions"][0][1], p["sentences"][0]]
    write_lines(os.path.join(TASKS, "texts.txt"), texts)

    # BEIR folder: every passage a document, the held-out questions the queries.
    write_jsonl(os.path.join(TASKS, "retrieval", "corpus.jsonl"),
                [{"_id": p["id"], "title": p["title"], "text": p["text"]} for p in passages])
    queries, qrels, graded = [], [], 0
    for p in passages:
        for qid, question, answer, _, number in p["questions"]:
            if not held_out_question(number):
                continue
            queries.append({"_id": qid, "text": question})
            qrels.append("%s\t%s\t2" % (qid, p["id"]))
            for other in secondary_relevance(passages, p, answer, question):
                qrels.append("%s\t%s\t1" % (qid, other["id"]))
                graded += 1
    write_jsonl(os.path.join(TASKS, "retrieval", "queries.jsonl"), queries)
    write_lines(os.path.join(TASKS, "retrieval", "qrels", "test.tsv"), ["query-id\tcorpus-id\tscore"] + qrels)

    # Classification: the held-out sentences (every fourth of a passage) and the held-out questions.
    rows = []
    for p in passages:
        rows += [{"text": s, "label": p["label"]} for i, s in enumerate(p["sentences"]) if held_out_sentence(i)]
    for p in passages:
        rows += [{"text": q[1], "label": p["label"]} for q in p["questions"] if held_out_question(q[4])]
    write_jsonl(os.path.join(TASKS, "classification.jsonl"), rows)

    # STS: 12 pairs of each grade, by the rule in the README.
    pairs = [(a, b, 5.0) for a, b in PARAPHRASES]
    questions = [(p, q) for p in passages for q in p["questions"]]
    sample = rng.sample(questions, 48)
    for n, (p, q) in enumerate(sample):
        spans = sentence_spans(p)
        holding = [i for i, (s, e) in enumerate(spans) if s <= q[3] < e][0]
        grade = [4.0, 3.0, 2.0, 1.0][n % 4]
        if grade == 4.0:
            pairs.append((q[1], p["sentences"][holding], 4.0))
        elif grade == 3.0:
            others = [i for i in range(len(spans)) if i != holding]
            pairs.append((q[1], p["sentences"][rng.choice(others)], 3.0))
        elif grade == 2.0:
            others = [o for o in p["questions"] if o[0] != q[0]]
            pairs.append((q[1], rng.choice(others)[1], 2.0))
        else:
            same_topic = [o for o in passages if o["label"] == p["label"] and o is not p]
            pairs.append((q[1], rng.choice(rng.choice(same_topic)["sentences"]), 1.0))
    for p, q in rng.sample(questions, 12):
        other_topic = [o for o in passages if o["label"] != p["label"]]
        pairs.append((q[1], rng.choice(rng.choice(other_topic)["sentences"]), 0.0))
    rng.shuffle(pairs)
    for a, b, _ in pairs:
        if "\t" in a + b or "\n" in a + b:
            sys.exit("train_tasks.py: an STS sentence holds a tab or a newline.")
    write_lines(os.path.join(TASKS, "sts.tsv"), ["sentence1\tsentence2\tscore"] +
                ["%s\t%s\t%.1f" % pair for pair in pairs])

    # Rerank example (one query line, one passage a line, as `rerank --passages` reads them).
    write_lines(os.path.join(TASKS, "rerank_query.txt"), [RERANK_QUERY])
    write_lines(os.path.join(TASKS, "rerank_passages.txt"), [by_title[t]["text"] for t in RERANK_TITLES])
    log("tasks/: %d texts, %d queries (%d grade-1 judgements), %d classification rows, %d STS pairs"
        % (len(texts), len(queries), graded, len(rows), len(pairs)))


# ----------------------------------------------------------------------------------------------
# Models: the encoder modules of train_demo.py at the task sizes, with Hugging Face's names


def use_task_sizes():
    demo.HIDDEN, demo.LAYERS, demo.HEADS, demo.INTERMEDIATE = HIDDEN, LAYERS, HEADS, INTERMEDIATE
    demo.ROBERTA.max_positions = ROBERTA_POSITIONS
    demo.BERT.max_positions = BERT_POSITIONS


def task_modules(torch):
    from torch import nn

    class SentenceEmbedder(nn.Module):
        """A bare RobertaModel as sentence-transformers saves it: embeddings.*, encoder.* (no prefix,
        no pooler: mean pooling does not use it)."""

        def __init__(self, encoder):
            super().__init__()
            self.embeddings = encoder.embeddings
            self.encoder = encoder.encoder
            self.forward_encoder = encoder.forward

        def forward(self, ids, attention):
            hidden = self.forward_encoder(ids, attention)
            mask = attention.unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    class RobertaClassificationHead(nn.Module):
        def __init__(self, labels):
            super().__init__()
            self.dense = nn.Linear(HIDDEN, HIDDEN)
            self.dropout = nn.Dropout(0.1)
            self.out_proj = nn.Linear(HIDDEN, labels)

        def forward(self, hidden):
            x = self.dropout(hidden[:, 0])
            return self.out_proj(self.dropout(torch.tanh(self.dense(x))))

    class RobertaForSequenceClassification(nn.Module):
        def __init__(self, encoder, labels):
            super().__init__()
            self.roberta = encoder
            self.classifier = RobertaClassificationHead(labels)
            for m in self.classifier.modules():
                if isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, std=0.02)
                    nn.init.zeros_(m.bias)

        def forward(self, ids, attention, types=None):
            return self.classifier(self.roberta(ids, attention))

    class BertPooler(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(HIDDEN, HIDDEN)

    class BertForSequenceClassification(nn.Module):
        def __init__(self, encoder, labels):
            super().__init__()
            self.bert = encoder
            self.bert.pooler = BertPooler()
            self.dropout = nn.Dropout(0.1)
            self.classifier = nn.Linear(HIDDEN, labels)
            for m in (self.bert.pooler.dense, self.classifier):
                nn.init.normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)

        def forward(self, ids, attention, types=None):
            hidden = self.bert(ids, attention, types)
            pooled = torch.tanh(self.bert.pooler.dense(hidden[:, 0]))
            return self.classifier(self.dropout(pooled))

    return SentenceEmbedder, RobertaForSequenceClassification, BertForSequenceClassification


def base_config(architecture, family, vocab_size):
    return {
        "architectures": [architecture],
        "model_type": family.model_type,
        "vocab_size": vocab_size,
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": INTERMEDIATE,
        "max_position_embeddings": family.max_positions,
        "type_vocab_size": family.type_vocab_size,
        "layer_norm_eps": family.layer_norm_eps,
        **family.config_ids,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02,
        "torch_dtype": "float32",
    }


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


def save_folder(directory, config, tensors, tokenizer_source, files):
    """Writes config.json, model.safetensors, the tokenizer files copied from tokenizer_source, and
    the extra JSON files given ({relative path: value}) into a fresh directory."""
    import shutil
    if os.path.exists(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)
    write_json(os.path.join(directory, "config.json"), config)
    demo.save_safetensors(os.path.join(directory, "model.safetensors"), tensors)
    for name in ("vocab.json", "merges.txt", "vocab.txt", "tokenizer_config.json"):
        if os.path.exists(os.path.join(tokenizer_source, name)):
            shutil.copyfile(os.path.join(tokenizer_source, name), os.path.join(directory, name))
    for relative, value in files.items():
        path = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if value is None:
            continue  # a folder with no files (2_Normalize)
        write_json(path, value)


# ----------------------------------------------------------------------------------------------
# Training


def start(torch_threads=1):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    torch.set_num_threads(torch_threads)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    return torch


def optimizer_for(torch, model, lr):
    decay = [p for n, p in model.named_parameters() if not ("bias" in n or "LayerNorm" in n)]
    no_decay = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.98), eps=1e-6)


def train_mlms(torch, work, steps, families):
    # steps: {"roberta": n, "bert": n}
    """Pre-trains a RoBERTa and/or a BERT MLM at the task sizes (train_demo.py's recipe) into work/."""
    passages, examples = demo.passages_and_examples()
    mask_sentences = demo.load_mask_sentences()
    for family, tokenizer, sentences in (
            (demo.ROBERTA, demo.load_tokenizer(os.path.join(DEMO, "qa-float")), mask_sentences),
            (demo.BERT, demo.load_wordpiece_tokenizer(os.path.join(DEMO, "bert-qa-float")), None)):
        if family.name not in families:
            continue
        if sentences is None:
            sentences = demo.bert_mask_sentences(tokenizer)
        ForMaskedLM, _ = demo.build_models(family)
        started = time.time()
        mlm = demo.train_mlm(torch, ForMaskedLM, tokenizer, passages, examples, sentences, steps[family.name])
        path = os.path.join(work, "%s-mlm.pt" % family.name)
        torch.save(mlm.state_dict(), path)
        log("%s MLM saved in %s (%.0f s)" % (family.name, path, time.time() - started))


def load_encoder(torch, family, work):
    ForMaskedLM, _ = demo.build_models(family)
    vocab = len(demo.load_tokenizer(os.path.join(DEMO, "qa-float")).vocab) if family is demo.ROBERTA else \
        len(demo.load_wordpiece_tokenizer(os.path.join(DEMO, "bert-qa-float")).vocab)
    mlm = ForMaskedLM(vocab)
    path = os.path.join(work, "%s-mlm.pt" % family.name)
    if not os.path.exists(path):
        sys.exit("train_tasks.py: %s is missing; run the mlm stage first." % path)
    mlm.load_state_dict(torch.load(path))
    return mlm.encoder_model()


def encode_batch(torch, tokenizer, texts, pairs=None):
    sequences, types = [], []
    for i, text in enumerate(texts):
        if pairs is None:
            ids = tokenizer.encode(text)[0]
            kinds = [0] * len(ids)
        else:
            ids, _, second = tokenizer.encode_pair(text, pairs[i])
            kinds = [0] * second + [1] * (len(ids) - second)
        sequences.append(ids[:MAX_SEQ_LENGTH])
        types.append(kinds[:MAX_SEQ_LENGTH])
    ids, attention = demo.pad_batch(torch, sequences, tokenizer.pad_id)
    length = ids.shape[1]
    token_types = torch.tensor([t + [0] * (length - len(t)) for t in types])
    return ids, attention, token_types


def retrieval_training_pairs(passages):
    """(query, passage index): the training-half questions and every passage sentence."""
    pairs = []
    for p in passages:
        pairs += [(q[1], p["index"]) for q in p["questions"] if not held_out_question(q[4])]
        pairs += [(s, p["index"]) for s in p["sentences"]]
    return pairs


def passage_view(rng, passage):
    # Half the time with the title in front, as a BEIR document is scored (title + " " + text).
    return document_text(passage) if rng.random() < 0.5 else passage["text"]


def train_embedder(torch, work, epochs):
    passages = corpus()
    tokenizer = demo.load_tokenizer(os.path.join(DEMO, "qa-float"))
    SentenceEmbedder, _, _ = task_modules(torch)
    torch.manual_seed(SEED + 10)
    model = SentenceEmbedder(load_encoder(torch, demo.ROBERTA, work))
    pairs = retrieval_training_pairs(passages)
    rng = random.Random(SEED + 10)
    optimizer = optimizer_for(torch, model, 5e-4)
    batch_size, temperature = 16, 0.05
    steps_per_epoch = math.ceil(len(pairs) / batch_size)
    total, step, started = epochs * steps_per_epoch, 0, time.time()
    log("embedder: %d (query, passage) pairs, batches of %d distinct passages, %d epochs" % (len(pairs), batch_size, epochs))
    model.train()
    for epoch in range(epochs):
        order = pairs[:]
        rng.shuffle(order)
        epoch_loss, batches = 0.0, 0
        while order:
            # A batch of pairs whose passages differ, so the other passages are true negatives.
            batch, seen, rest = [], set(), []
            for pair in order:
                if len(batch) < batch_size and pair[1] not in seen:
                    batch.append(pair)
                    seen.add(pair[1])
                else:
                    rest.append(pair)
            order = rest
            if len(batch) < 2:
                break
            queries = [QUERY_PROMPT + q for q, _ in batch]
            documents = [PASSAGE_PROMPT + passage_view(rng, passages[i]) for _, i in batch]
            for group in optimizer.param_groups:
                group["lr"] = 5e-4 * demo.linear_schedule(step, total, total // 10)
            q = model(*encode_batch(torch, tokenizer, queries)[:2])
            d = model(*encode_batch(torch, tokenizer, documents)[:2])
            logits = q @ d.T / temperature
            target = torch.arange(len(batch))
            loss = (torch.nn.functional.cross_entropy(logits, target) +
                    torch.nn.functional.cross_entropy(logits.T, target)) / 2
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            epoch_loss += loss.item()
            batches += 1
            step += 1
        log("embedder epoch %d/%d loss %.3f (%.0f s)" % (epoch + 1, epochs, epoch_loss / max(1, batches), time.time() - started))
    model.eval()
    config = base_config("RobertaModel", demo.ROBERTA, len(tokenizer.vocab))
    files = {
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
        "1_Pooling/config.json": {
            "word_embedding_dimension": HIDDEN, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_weightedmean_tokens": False, "pooling_mode_lasttoken": False, "include_prompt": True},
        "2_Normalize/": None,
        "sentence_bert_config.json": {"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False},
        "config_sentence_transformers.json": {
            "__version__": {"sentence_transformers": "3.0.1"},
            "prompts": {"query": QUERY_PROMPT, "passage": PASSAGE_PROMPT},
            "default_prompt_name": None, "similarity_fn_name": "cosine"},
    }
    save_folder(os.path.join(DEMO, "embed-float"), config, model.state_dict(), os.path.join(DEMO, "qa-float"), files)
    log("saved embed-float (%.0f s)" % (time.time() - started))
    return model


def embed_texts(torch, model, tokenizer, texts):
    out = []
    with torch.no_grad():
        for start in range(0, len(texts), 32):
            ids, attention, _ = encode_batch(torch, tokenizer, texts[start:start + 32])
            out.append(model(ids, attention))
    return torch.cat(out)


def reranker_training_queries(passages):
    """(query, passage index, sentence index the query is about): the training-half questions (the
    sentence that holds the answer) and every passage sentence (itself)."""
    queries = []
    for p in passages:
        spans = sentence_spans(p)
        for q in p["questions"]:
            if not held_out_question(q[4]):
                queries.append((q[1], p["index"], [k for k, (a, b) in enumerate(spans) if a <= q[3] < b][0]))
        queries += [(sentence, p["index"], k) for k, sentence in enumerate(p["sentences"])]
    return queries


def window(passage, first):
    # Two consecutive sentences: the reranker is trained on short windows of the passages (a fifth of
    # a passage's tokens, so that it trains in minutes on a busy machine) and scores whole passages.
    return " ".join(passage["sentences"][first:first + 2])


def train_reranker(torch, work, epochs, learning_rate, negatives=5):
    """A cross-encoder trained listwise: each training query with a window of its passage (the
    sentence it is about and the next) and windows of five other passages (four the embedder ranks
    highest among the wrong passages, one at random), softmax over the six logits."""
    passages = corpus()
    tokenizer = demo.load_tokenizer(os.path.join(DEMO, "qa-float"))
    SentenceEmbedder, ForSequenceClassification, _ = task_modules(torch)
    queries = reranker_training_queries(passages)

    # Hard negatives from embed-float (read back through the training modules).
    embedder = SentenceEmbedder(load_encoder(torch, demo.ROBERTA, work))
    embedder.load_state_dict(read_safetensors(torch, os.path.join(DEMO, "embed-float", "model.safetensors")))
    embedder.eval()
    q = embed_texts(torch, embedder, tokenizer, [QUERY_PROMPT + text for text, _, _ in queries])
    d = embed_texts(torch, embedder, tokenizer, [PASSAGE_PROMPT + document_text(p) for p in passages])
    ranked = (q @ d.T).argsort(dim=1, descending=True).tolist()

    # The cross-encoder starts from the embedder's encoder (which already relates questions to
    # passages), with a new head.
    torch.manual_seed(SEED + 20)
    model = ForSequenceClassification(load_encoder(torch, demo.ROBERTA, work), 1)
    model.roberta.load_state_dict(embedder.state_dict())
    rng = random.Random(SEED + 20)
    optimizer = optimizer_for(torch, model, learning_rate)
    queries_per_step = 4
    steps_per_epoch = math.ceil(len(queries) / queries_per_step)
    total, step, started = epochs * steps_per_epoch, 0, time.time()
    log("reranker: %d queries, 1 positive + %d negatives each, %d epochs" % (len(queries), negatives, epochs))
    model.train()
    for epoch in range(epochs):
        order = list(range(len(queries)))
        rng.shuffle(order)
        epoch_loss, running = 0.0, None
        for b in range(0, len(order), queries_per_step):
            firsts, seconds = [], []
            for k in order[b:b + queries_per_step]:
                text, positive, sentence = queries[k]
                hard = [i for i in ranked[k][:8] if i != positive][:4]
                pool = [i for i in range(len(passages)) if i != positive and i not in hard]
                others = hard + rng.sample(pool, negatives - len(hard))
                firsts += [text] * (negatives + 1)
                seconds.append(window(passages[positive], max(0, min(sentence, len(passages[positive]["sentences"]) - 2))))
                for i in others:
                    seconds.append(window(passages[i], rng.randrange(max(1, len(passages[i]["sentences"]) - 1))))
            for g in optimizer.param_groups:
                g["lr"] = learning_rate * demo.linear_schedule(step, total, total // 10)
            ids, attention, _ = encode_batch(torch, tokenizer, firsts, seconds)
            scores = model(ids, attention).view(-1, negatives + 1)
            loss = torch.nn.functional.cross_entropy(scores, torch.zeros(scores.shape[0], dtype=torch.long))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            epoch_loss += loss.item()
            running = loss.item() if running is None else 0.95 * running + 0.05 * loss.item()
            step += 1
            if step % 20 == 0:
                log("reranker step %d/%d loss %.3f (%.0f s)" % (step, total, running, time.time() - started))
        log("reranker epoch %d/%d loss %.3f (%.0f s)" % (epoch + 1, epochs, epoch_loss / steps_per_epoch, time.time() - started))
    model.eval()
    config = base_config("RobertaForSequenceClassification", demo.ROBERTA, len(tokenizer.vocab))
    config.update({"num_labels": 1, "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}})
    save_folder(os.path.join(DEMO, "rerank-float"), config, model.state_dict(), os.path.join(DEMO, "qa-float"), {})
    log("saved rerank-float (%.0f s)" % (time.time() - started))


def classification_training_rows(passages):
    rows = []
    for p in passages:
        label = LABELS.index(p["label"])
        rows += [(s, label) for i, s in enumerate(p["sentences"]) if not held_out_sentence(i)]
        rows += [(q[1], label) for q in p["questions"] if not held_out_question(q[4])]
    return rows


def train_classifier(torch, work, epochs):
    passages = corpus()
    tokenizer = demo.load_wordpiece_tokenizer(os.path.join(DEMO, "bert-qa-float"))
    _, _, ForSequenceClassification = task_modules(torch)
    torch.manual_seed(SEED + 30)
    model = ForSequenceClassification(load_encoder(torch, demo.BERT, work), len(LABELS))
    rows = classification_training_rows(passages)
    rng = random.Random(SEED + 30)
    optimizer = optimizer_for(torch, model, 1e-3)
    batch_size = 16
    steps_per_epoch = math.ceil(len(rows) / batch_size)
    total, step, started = epochs * steps_per_epoch, 0, time.time()
    log("classifier: %d labelled texts, %d labels, %d epochs" % (len(rows), len(LABELS), epochs))
    model.train()
    for epoch in range(epochs):
        order = rows[:]
        rng.shuffle(order)
        epoch_loss, correct = 0.0, 0
        for b in range(0, len(order), batch_size):
            batch = order[b:b + batch_size]
            ids, attention, types = encode_batch(torch, tokenizer, [t for t, _ in batch])
            labels = torch.tensor([l for _, l in batch])
            for g in optimizer.param_groups:
                g["lr"] = 1e-3 * demo.linear_schedule(step, total, total // 10)
            logits = model(ids, attention, types)
            loss = torch.nn.functional.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            epoch_loss += loss.item()
            correct += (logits.argmax(-1) == labels).sum().item()
            step += 1
        log("classifier epoch %d/%d loss %.3f, train accuracy %.3f (%.0f s)"
            % (epoch + 1, epochs, epoch_loss / steps_per_epoch, correct / len(rows), time.time() - started))
    model.eval()
    config = base_config("BertForSequenceClassification", demo.BERT, len(tokenizer.vocab))
    config.update({"num_labels": len(LABELS), "problem_type": "single_label_classification",
                   "id2label": {str(i): name for i, name in enumerate(LABELS)},
                   "label2id": {name: i for i, name in enumerate(LABELS)}})
    save_folder(os.path.join(DEMO, "classify-float"), config, model.state_dict(), os.path.join(DEMO, "bert-qa-float"), {})
    log("saved classify-float (%.0f s)" % (time.time() - started))


def command_train(args):
    torch = start()
    use_task_sizes()
    os.makedirs(args.work, exist_ok=True)
    started = time.time()
    if args.stage in ("all", "mlm"):
        train_mlms(torch, args.work, {"roberta": args.mlm_steps, "bert": args.bert_mlm_steps}, ("roberta", "bert") if args.mlm_family == "all" else (args.mlm_family,))
    if args.stage in ("all", "embed"):
        train_embedder(torch, args.work, args.embed_epochs)
    if args.stage in ("all", "rerank"):
        train_reranker(torch, args.work, args.rerank_epochs, args.rerank_lr)
    if args.stage in ("all", "classify"):
        train_classifier(torch, args.work, args.classify_epochs)
    log("training (%s) took %.0f s" % (args.stage, time.time() - started))


# ----------------------------------------------------------------------------------------------
# Independent forward: the Hugging Face architectures as DESIGN.md states them, as plain functions
# of the tensors read from model.safetensors (nothing shared with the training modules above).


def read_safetensors(torch, path):
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + size])
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            sys.exit("%s: %s is %s; the float demos are F32" % (path, name, entry["dtype"]))
        begin, end = entry["data_offsets"]
        values = struct.unpack("<%df" % ((end - begin) // 4), data[8 + size + begin:8 + size + end])
        tensors[name] = torch.tensor(values, dtype=torch.float32).reshape(entry["shape"])
    return tensors


class Reference:
    """A float64 forward of RobertaModel / BertModel and their heads from a folder's files.
    `linear` can be replaced to emulate a quantized Linear (see choose-defect)."""

    def __init__(self, torch, directory):
        self.torch = torch
        with open(os.path.join(directory, "config.json")) as f:
            self.config = json.load(f)
        self.weights = {k: v.double() for k, v in read_safetensors(torch, os.path.join(directory, "model.safetensors")).items()}
        self.bert = self.config["model_type"] == "bert"
        architecture = self.config["architectures"][0]
        self.bare = architecture in ("RobertaModel", "BertModel")
        self.prefix = ""
        if not self.bare or any(k.startswith(self.config["model_type"] + ".") for k in self.weights):
            self.prefix = self.config["model_type"] + "."
        self.linear_hook = None

    def w(self, name):
        return self.weights[self.prefix + name] if (self.prefix + name) in self.weights else self.weights[name]

    def linear(self, name, x, full_name):
        if self.linear_hook is not None:
            return self.linear_hook(full_name, x)
        return x @ self.weights[full_name + ".weight"].T + self.weights[full_name + ".bias"]

    def encoder_linear(self, name, x):
        full = (self.prefix + name) if (self.prefix + name + ".weight") in self.weights else name
        return self.linear(name, x, full)

    def layer_norm(self, x, name):
        eps = self.config["layer_norm_eps"]
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / self.torch.sqrt(var + eps) * self.w(name + ".weight") + self.w(name + ".bias")

    def hidden_states(self, ids, types=None):
        torch = self.torch
        ids = torch.tensor(ids)
        n = ids.shape[0]
        if self.bert:
            positions = torch.arange(n)
        else:
            positions = torch.arange(n) + self.config["pad_token_id"] + 1  # no padding in a single sequence
        x = self.w("embeddings.word_embeddings.weight")[ids] + self.w("embeddings.position_embeddings.weight")[positions]
        type_ids = torch.tensor(types) if types is not None else torch.zeros(n, dtype=torch.long)
        x = x + self.w("embeddings.token_type_embeddings.weight")[type_ids]
        x = self.layer_norm(x, "embeddings.LayerNorm")
        heads = self.config["num_attention_heads"]
        size = self.config["hidden_size"] // heads
        for layer in range(self.config["num_hidden_layers"]):
            p = "encoder.layer.%d." % layer
            q = self.encoder_linear(p + "attention.self.query", x).view(n, heads, size).transpose(0, 1)
            k = self.encoder_linear(p + "attention.self.key", x).view(n, heads, size).transpose(0, 1)
            v = self.encoder_linear(p + "attention.self.value", x).view(n, heads, size).transpose(0, 1)
            attention = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(size), dim=-1)
            context = (attention @ v).transpose(0, 1).reshape(n, heads * size)
            x = self.layer_norm(self.encoder_linear(p + "attention.output.dense", context) + x, p + "attention.output.LayerNorm")
            inner = self.encoder_linear(p + "intermediate.dense", x)
            inner = 0.5 * inner * (1 + torch.erf(inner / math.sqrt(2)))  # GELU (erf)
            x = self.layer_norm(self.encoder_linear(p + "output.dense", inner) + x, p + "output.LayerNorm")
        return x

    def embedding(self, ids):
        hidden = self.hidden_states(ids)
        pooled = hidden.mean(0)  # mean over every token whose mask is 1, specials included
        return pooled / pooled.norm()

    def logits(self, ids, types=None):
        torch = self.torch
        first = self.hidden_states(ids, types)[0]
        if self.bert:
            pooled = torch.tanh(self.linear("pooler.dense", first, "bert.pooler.dense"))
            return self.linear("classifier", pooled, "classifier")
        return self.linear("classifier.out_proj", torch.tanh(self.linear("classifier.dense", first, "classifier.dense")),
                           "classifier.out_proj")


def spearman(xs, ys):
    def ranks(values):
        order = sorted(range(len(values)), key=lambda i: values[i])
        result = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                result[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return result
    a, b = ranks(xs), ranks(ys)
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))


def retrieval_metrics(scores_by_query, qrels, doc_order):
    """BEIR's nDCG@10, MRR@10, recall@k (ties broken by document order)."""
    ndcg = mrr = 0.0
    recall = {1: 0.0, 5: 0.0, 10: 0.0}
    for qid, scores in scores_by_query.items():
        grades = qrels[qid]
        ranking = sorted(range(len(doc_order)), key=lambda i: (-scores[i], i))
        ranked_ids = [doc_order[i] for i in ranking]
        dcg = sum(grades.get(d, 0) / math.log2(r + 2) for r, d in enumerate(ranked_ids[:10]))
        ideal = sorted(grades.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
        ndcg += dcg / idcg
        first = next((r for r, d in enumerate(ranked_ids[:10]) if grades.get(d, 0) > 0), None)
        mrr += 0.0 if first is None else 1.0 / (first + 1)
        relevant = [d for d, g in grades.items() if g >= 1]
        for k in recall:
            recall[k] += len(set(ranked_ids[:k]) & set(relevant)) / len(relevant)
    n = len(scores_by_query)
    result = {"queries": n, "ndcg_at_10": ndcg / n, "mrr_at_10": mrr / n}
    result.update({"recall_at_%d" % k: v / n for k, v in recall.items()})
    return result


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def load_retrieval():
    folder = os.path.join(TASKS, "retrieval")
    documents = read_jsonl(os.path.join(folder, "corpus.jsonl"))
    queries = read_jsonl(os.path.join(folder, "queries.jsonl"))
    qrels = {}
    with open(os.path.join(folder, "qrels", "test.tsv")) as f:
        next(f)
        for line in f:
            qid, did, grade = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(grade)
    return documents, queries, qrels


def rounded(value):
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def command_verify(args):
    torch = start()
    torch.use_deterministic_algorithms(False)
    roberta = demo.load_tokenizer(os.path.join(DEMO, "embed-float"))
    bert = demo.load_wordpiece_tokenizer(os.path.join(DEMO, "classify-float"))
    path = os.path.join(TASKS, "metrics.json")
    previous = {}
    if os.path.exists(path):
        with open(path) as f:
            previous = json.load(f)
    metrics = {"note": "Measured by resources/demo/tools/train_tasks.py verify: an independent float64 forward of the "
                       "saved float checkpoints (plain torch functions on model.safetensors) on the files in tasks/."}
    started = time.time()

    embedder = Reference(torch, os.path.join(DEMO, "embed-float"))
    documents, queries, qrels = load_retrieval()

    def embed(text, prompt):
        return embedder.embedding(roberta.encode(prompt + text)[0][:MAX_SEQ_LENGTH])

    doc_vectors = torch.stack([embed((d["title"] + " " + d["text"]).strip(), PASSAGE_PROMPT) for d in documents])
    scores = {q["_id"]: (doc_vectors @ embed(q["text"], QUERY_PROMPT)).tolist() for q in queries if q["_id"] in qrels}
    doc_order = [d["_id"] for d in documents]
    metrics["embed-float"] = {"retrieval": retrieval_metrics(scores, qrels, doc_order)}
    # The same with the training half of the questions (seen in training) for comparison.
    passages = corpus()
    seen_qrels = {q[0]: {p["id"]: 2} for p in passages for q in p["questions"] if not held_out_question(q[4])}
    seen_scores = {q[0]: (doc_vectors @ embed(q[1], QUERY_PROMPT)).tolist()
                   for p in passages for q in p["questions"] if not held_out_question(q[4])}
    metrics["embed-float"]["retrieval_training_questions"] = retrieval_metrics(seen_scores, seen_qrels, doc_order)
    with open(os.path.join(TASKS, "sts.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    for name, prompt in (("sts_spearman_x100", ""), ("sts_spearman_x100_query_prompt", QUERY_PROMPT)):
        cosines = [float(embed(a, prompt) @ embed(b, prompt)) for a, b, _ in rows]
        metrics["embed-float"][name] = 100 * spearman(cosines, [float(s) for _, _, s in rows])
    log("embed-float: %s (%.0f s)" % (rounded(metrics["embed-float"]), time.time() - started))

    if "rerank" in args.models:
        reranker = Reference(torch, os.path.join(DEMO, "rerank-float"))

        def rerank_score(query, passage):
            ids, _, _ = roberta.encode_pair(query, passage)
            return float(reranker.logits(ids[:MAX_SEQ_LENGTH])[0])

        with open(os.path.join(TASKS, "rerank_query.txt")) as f:
            query = f.read().strip()
        with open(os.path.join(TASKS, "rerank_passages.txt")) as f:
            candidates = [line.rstrip("\n") for line in f if line.strip()]
        example = [rerank_score(query, c) for c in candidates]
        order = sorted(range(len(candidates)), key=lambda i: (-example[i], i))
        metrics["rerank-float"] = {"demo_query": query,
                                   "ranking": [{"index": i, "title": RERANK_TITLES[i], "score": example[i]} for i in order]}
        # Retrieve, then rerank: the cross-encoder reorders the embedder's ten best documents of each
        # query (the rest keep the embedder's order below them), as a reranker is used; scoring all 55
        # documents of all 132 queries in float64 takes too long on a busy machine.
        rerank_scores = {}
        for q in queries:
            if q["_id"] not in qrels:
                continue
            first_stage = scores[q["_id"]]
            order = sorted(range(len(documents)), key=lambda i: (-first_stage[i], i))
            reranked = [0.0] * len(documents)
            for r, i in enumerate(order):
                reranked[i] = -1e6 - r
            for i in order[:10]:
                reranked[i] = rerank_score(q["text"], (documents[i]["title"] + " " + documents[i]["text"]).strip())
            rerank_scores[q["_id"]] = reranked
        metrics["rerank-float"]["retrieval_reranking_embed_top10"] = retrieval_metrics(rerank_scores, qrels, doc_order)
        log("rerank-float: %s (%.0f s)" % (rounded(metrics["rerank-float"]), time.time() - started))

    if "classify" in args.models:
        classifier = Reference(torch, os.path.join(DEMO, "classify-float"))
        id2label = classifier.config["id2label"]
        rows = read_jsonl(os.path.join(TASKS, "classification.jsonl"))
        correct, confusion = 0, {}
        for row in rows:
            ids, _ = bert.encode(row["text"])
            predicted = id2label[str(int(classifier.logits(ids[:MAX_SEQ_LENGTH]).argmax()))]
            correct += predicted == row["label"]
            confusion.setdefault(row["label"], {}).setdefault(predicted, 0)
            confusion[row["label"]][predicted] += 1
        training = classification_training_rows(passages)
        train_correct = sum(int(classifier.logits(bert.encode(t)[0]).argmax()) == l for t, l in training)
        metrics["classify-float"] = {"accuracy": correct / len(rows), "rows": len(rows), "confusion": confusion,
                                     "training_accuracy": train_correct / len(training)}
        log("classify-float: %s (%.0f s)" % (rounded(metrics["classify-float"]), time.time() - started))
    for name in ("embed-float", "rerank-float", "classify-float"):
        if name not in metrics and name in previous:
            metrics[name] = previous[name]  # not measured now: kept
    write_json(path, rounded(metrics))


# ----------------------------------------------------------------------------------------------
# Choosing the planted defect: the reranker with FP8 weights per tensor and static per-tensor input
# scales (what `quantize --weights tensor --activations tensor --calibration` writes), emulated.


def e4m3(torch, x):
    """Rounds to the nearest E4M3FN value (ties to even), saturating at 448."""
    x = x.clamp(-448.0, 448.0)
    magnitude = x.abs()
    exponent = torch.floor(torch.log2(magnitude.clamp(min=2.0 ** -9))).clamp(min=-6)
    step = torch.pow(2.0, exponent - 3)
    return torch.round(x / step) * step


def command_choose_defect(args):
    torch = start()
    torch.use_deterministic_algorithms(False)
    roberta = demo.load_tokenizer(os.path.join(DEMO, "rerank-float"))
    model = Reference(torch, os.path.join(DEMO, "rerank-float"))
    linears = sorted(k[:-len(".weight")] for k in model.weights if k.endswith(".weight") and model.weights[k].dim() == 2
                     and "embeddings" not in k)
    amax = {name: 0.0 for name in linears}

    def observe(name, x):
        amax[name] = max(amax[name], float(x.abs().max()))
        return x @ model.weights[name + ".weight"].T + model.weights[name + ".bias"]

    model.linear_hook = observe
    with open(os.path.join(demo.CORPUS, "calibration.txt")) as f:
        for line in f:
            if line.strip():
                model.logits(roberta.encode(line.strip())[0][:MAX_SEQ_LENGTH])
    quantized = {}
    for name in linears:
        w = model.weights[name + ".weight"]
        scale = float(w.abs().max()) / 448.0
        quantized[name] = (e4m3(torch, w / scale) * scale, amax[name] / 448.0)
    planted = {"name": None}

    def fp8(name, x):
        weight, input_scale = quantized[name]
        if name == planted["name"]:
            input_scale = input_scale / 64
        return (e4m3(torch, x / input_scale) * input_scale) @ weight.T + model.weights[name + ".bias"]

    with open(os.path.join(TASKS, "rerank_query.txt")) as f:
        query = f.read().strip()
    with open(os.path.join(TASKS, "rerank_passages.txt")) as f:
        candidates = [line.rstrip("\n") for line in f if line.strip()]
    pairs = [roberta.encode_pair(query, c)[0] for c in candidates]

    def ranking(hook):
        model.linear_hook = hook
        scores = [float(model.logits(ids)[0]) for ids in pairs]
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i)), scores

    reference, _ = ranking(None)
    static, _ = ranking(fp8)
    log("float ranking %s; static FP8 ranking %s" % (reference, static))
    results = []
    for name in linears:
        planted["name"] = name
        order, scores = ranking(fp8)
        moved = sum(a != b for a, b in zip(order, reference))
        results.append((name, order, moved))
        log("%-50s top-1 %s, %d of %d positions moved: %s" % (name, "kept" if order[0] == reference[0] else "CHANGED",
                                                             moved, len(order), order))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("datasets").set_defaults(run=command_datasets)
    train = commands.add_parser("train")
    train.add_argument("--stage", choices=("all", "mlm", "embed", "rerank", "classify"), default="all")
    train.add_argument("--work", default=os.path.join("/tmp", "scalescope-task-demos"),
                       help="where the pre-trained MLMs are kept between stages (not shipped)")
    train.add_argument("--mlm-steps", type=int, default=3000, help="RoBERTa MLM steps")
    train.add_argument("--bert-mlm-steps", type=int, default=1500)
    train.add_argument("--mlm-family", choices=("all", "roberta", "bert"), default="all",
                       help="the mlm stage pre-trains both encoders, or one of them")
    train.add_argument("--embed-epochs", type=int, default=8)
    train.add_argument("--rerank-epochs", type=int, default=3)
    train.add_argument("--rerank-lr", type=float, default=2e-3)
    train.add_argument("--classify-epochs", type=int, default=40)
    train.set_defaults(run=command_train)
    verify = commands.add_parser("verify")
    verify.add_argument("--models", default="embed,rerank,classify",
                        help="which to measure (the embedder always: the reranker reorders its top 10); others keep their numbers")
    verify.set_defaults(run=command_verify)
    commands.add_parser("choose-defect").set_defaults(run=command_choose_defect)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
