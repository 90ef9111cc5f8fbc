"""Writes the base64 descriptors of this folder's .proto files the way Confluent's Python serializer registers them.

confluent-kafka's ProtobufSerializer registers base64(module.DESCRIPTOR.serialized_pb) of a protoc-generated
_pb2 module, and the same for each import it registers as a reference (with skip.known.types false, the
well-known ones too). Run from this folder, in a throwaway virtual environment:

    python -m venv VENV && VENV/bin/pip install grpcio-tools protobuf confluent-kafka
    VENV/bin/python -m grpc_tools.protoc -I. -I../../known --python_out=OUT sinktest/site.proto \
        sinktest/envelope.proto sinktest/edition.proto sinktest/payment.proto
    PYTHONPATH=OUT:CONFLUENT VENV/bin/python generate.py

where CONFLUENT is the folder of confluent-kafka's `confluent_kafka/schema_registry` package, which holds
the generated `confluent` modules that sinktest/payment.proto's module imports.

It rewrites the *.b64 files beside it.
"""

import base64

from google.protobuf import timestamp_pb2, wrappers_pb2
from sinktest import edition_pb2, envelope_pb2, payment_pb2, site_pb2

for name, module in [
    ("edition.b64", edition_pb2),
    ("envelope.b64", envelope_pb2),
    ("payment.b64", payment_pb2),
    ("site.b64", site_pb2),
    ("timestamp.b64", timestamp_pb2),
    ("wrappers.b64", wrappers_pb2),
]:
    with open(name, "w") as f:
        f.write(base64.standard_b64encode(module.DESCRIPTOR.serialized_pb).decode("ascii") + "\n")
