"""A stand-in lmms-eval model that answers each document with a given text (no model call), for the toolkit tests of
`vqalib score`. Registered as lmms-eval documents for plugin models: an entry point of the group ``lmms_eval.models``
(``released_answers_plugin-1.dist-info/entry_points.txt`` beside this file), so with this folder on ``PYTHONPATH``

    lmms-eval --model released_answers --model_args answers_file=ANSWERS.json ...

runs it. ANSWERS.json maps each document's ``item_id`` to the answer; other model arguments (``pretrained=``) are
accepted and unused, so the README's command line runs with only ``--model`` and the answers file changed.
"""

import json

from lmms_eval.api.model import lmms
from lmms_eval.models.registry_v2 import ModelManifest


class ReleasedAnswers(lmms):
    """The answer given for each document's item_id."""

    is_simple = True

    def __init__(self, answers_file=None, **kwargs):
        super().__init__()
        with open(answers_file, encoding="utf-8") as handle:
            self.answers = json.load(handle)

    def generate_until(self, requests):
        out = []
        for request in requests:
            _, _, doc_to_visual, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            doc_to_visual(doc)  # the task's image loading runs as for a real model
            out.append(self.answers[doc["item_id"]])
        return out

    def loglikelihood(self, requests):
        raise NotImplementedError

    def generate_until_multi_round(self, requests):
        raise NotImplementedError


MANIFEST = ModelManifest(model_id="released_answers", simple_class_path="released_answers.ReleasedAnswers")
