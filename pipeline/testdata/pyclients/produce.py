"""Produce events through Confluent's own Python serializers, as an outside client would.

    python produce.py --bootstrap HOST:PORT --registry URL --topic T --format avro|protobuf|json --events FILE
        [--key-schema FILE]

FILE holds one JSON object a line: {"key": ..., "partition": ..., "timestamp": <epoch ms>, "value": {...}} and
optionally "schema": the name of another schema file of this directory for that record (a JSON Schema version).
"value" is the event as the sink's json codec reads it: numbers are kept exactly (decimals keep their scale),
times are RFC 3339 text, dates YYYY-MM-DD. Each record goes through confluent_kafka's SerializingProducer with
AvroSerializer (reading.avsc), ProtobufSerializer (classes protoc generates from proto/ into a temporary
directory) or JSONSerializer (reading.schema.json), each registering its schema itself (auto.register.schemas).
Keys are text (StringSerializer), or with --key-schema (an Avro schema file of this directory) each "key" is an
object that AvroSerializer writes as the record's key, registering the schema under <topic>-key itself.
One JSON line a record is printed once Kafka acknowledged it: {"line": n, "partition": p, "offset": o}.
"""

import argparse
import datetime
import decimal
import importlib
import json
import os
import sys
import tempfile

from confluent_kafka import SerializingProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import StringSerializer

HERE = os.path.dirname(os.path.abspath(__file__))
REGISTER = {"auto.register.schemas": True}


def parse_time(text):
    """An RFC 3339 UTC time with up to microseconds, as the events file writes it."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def parse_date(text):
    return datetime.date.fromisoformat(text)


def avro_record(v):
    out = {
        "device_id": v["device_id"],
        "ts": parse_time(v["ts"]),
        "value": float(v["value"]),
        "amount": decimal.Decimal(v["amount"]),
        "day": parse_date(v["day"]),
        "uid": v["uid"],
        "note": v.get("note"),
        "site": {"id": v["site"]["id"]},
        "kind": v["kind"],
        "born": parse_time(v["born"]),
    }
    return out


def generated_module():
    """Compiles proto/ with grpcio-tools' protoc into a temporary directory and imports reading_pb2."""
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="pyclients-pb2-")
    wkt = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    src = os.path.join(HERE, "proto")
    files = ["it/pyclients/kind.proto", "it/pyclients/reading.proto"]
    rc = protoc.main(["protoc", "-I" + src, "-I" + wkt, "--python_out=" + out] + files)
    if rc != 0:
        sys.exit("protoc failed on %s (exit %d)" % (files, rc))
    sys.path.insert(0, out)
    return importlib.import_module("it.pyclients.reading_pb2")


def protobuf_factory(pb2):
    from google.protobuf import timestamp_pb2

    def stamp(dt):
        ts = timestamp_pb2.Timestamp()
        ts.FromDatetime(dt)
        return ts

    kinds = pb2.Reading.DESCRIPTOR.fields_by_name["kind"].enum_type

    def make(v):
        m = pb2.Reading()
        m.device_id = v["device_id"]
        m.ts.CopyFrom(stamp(parse_time(v["ts"])))
        m.value = float(v["value"])
        m.amount = str(v["amount"])
        day = parse_date(v["day"])
        m.day.CopyFrom(stamp(datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.timezone.utc)))
        m.uid = v["uid"]
        if "note" in v:
            m.note = v["note"]
        m.site.id = v["site"]["id"]
        m.kind = kinds.values_by_name[v["kind"]].number
        m.born.CopyFrom(stamp(parse_time(v["born"])))
        return m

    return make


def exact_json(value):
    """json.dumps that writes a Decimal as its own text, so 12.050 keeps its scale and -0.0 its sign."""
    marks = {}

    def default(o):
        if isinstance(o, decimal.Decimal):
            mark = "\x00dec%d\x00" % len(marks)
            marks[mark] = str(o)
            return mark
        raise TypeError("%r is not JSON serializable" % (o,))

    text = json.dumps(value, default=default, ensure_ascii=False, separators=(",", ":"))
    for mark, num in marks.items():
        text = text.replace(json.dumps(mark), num)
    return text


def read_schema(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


class BySchema:
    """A value serializer for SerializingProducer that hands each (schema, value) pair to the official serializer
    of that schema, so one producer can write records of two schema versions."""

    def __init__(self, make):
        self.make = make
        self.serializers = {}

    def __call__(self, pair, ctx):
        schema, value = pair
        if schema not in self.serializers:
            self.serializers[schema] = self.make(schema)
        return self.serializers[schema](value, ctx)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--registry", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--format", required=True, choices=["avro", "protobuf", "json"])
    p.add_argument("--events", required=True)
    p.add_argument("--key-schema", help="an Avro schema file of this directory: the keys are objects it serializes")
    args = p.parse_args()

    registry = SchemaRegistryClient({"url": args.registry})
    if args.format == "avro":
        default_schema, convert = "reading.avsc", avro_record
        value_serializer = BySchema(
            lambda name: AvroSerializer(registry, read_schema(name), lambda obj, ctx: obj, conf=REGISTER))
    elif args.format == "protobuf":
        pb2 = generated_module()
        default_schema, convert = "reading.proto", protobuf_factory(pb2)
        value_serializer = BySchema(lambda name: ProtobufSerializer(pb2.Reading, registry, conf=REGISTER))
    else:
        default_schema, convert = "reading.schema.json", lambda v: v
        value_serializer = BySchema(lambda name: JSONSerializer(
            read_schema(name), registry, conf=REGISTER, json_encode=exact_json))

    key_serializer = StringSerializer("utf_8")
    if args.key_schema:
        key_serializer = AvroSerializer(registry, read_schema(args.key_schema), lambda obj, ctx: obj, conf=REGISTER)
    producer = SerializingProducer({
        "bootstrap.servers": args.bootstrap,
        "enable.idempotence": True,  # the records of a partition keep their order through retries
        "linger.ms": 5,
        "key.serializer": key_serializer,
        "value.serializer": value_serializer,
    })
    delivered, failures = {}, []

    def report(line):
        def on_delivery(err, msg):
            if err is not None:
                failures.append("line %d: %s" % (line, err))
            else:
                delivered[line] = (msg.partition(), msg.offset())
        return on_delivery

    with open(args.events, encoding="utf-8") as f:
        lines = [json.loads(text, parse_float=decimal.Decimal) for text in f if text.strip()]
    for n, ev in enumerate(lines):
        value = (ev.get("schema", default_schema), convert(ev["value"]))
        producer.produce(args.topic, key=ev["key"], value=value, partition=ev["partition"],
                         timestamp=ev["timestamp"], on_delivery=report(n))
        producer.poll(0)
    left = producer.flush(60)
    if left or failures:
        sys.exit("%d records not delivered: %s" % (left + len(failures), "; ".join(failures[:5])))
    for n in range(len(lines)):
        part, off = delivered[n]
        print(json.dumps({"line": n, "partition": part, "offset": off}))


if __name__ == "__main__":
    main()
