#!/usr/bin/env python3
"""Splits the demo corpus into calibration and evaluation texts for the calibration lab.

Every question of corpus/questions.json becomes one line, "question context" (one text per line, as
quantize --calibration and calibrate read them); questions 0, 2, 4, ... in file order go to
corpus/calibration.txt and questions 1, 3, 5, ... to corpus/evaluation.txt.
"""
import json
import os

corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus")
with open(os.path.join(corpus, "questions.json"), encoding="utf-8") as f:
    data = json.load(f)["data"]
lines = [" ".join((qa["question"] + " " + paragraph["context"]).split())
         for article in data for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
for name, part in (("calibration.txt", lines[0::2]), ("evaluation.txt", lines[1::2])):
    with open(os.path.join(corpus, name), "w", encoding="utf-8") as f:
        f.write("\n".join(part) + "\n")
