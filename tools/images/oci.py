#!/usr/bin/python3
"""Writes OCI image layouts (and docker-archive trees) from reproducible layer tarballs.

All JSON is canonical (sorted keys, no spaces) and every date is SOURCE_DATE_EPOCH, so the
same layer tars always give the same manifest digest. Used by tools/images/build.
"""

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
REF_NAME = "org.opencontainers.image.ref.name"


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def sha256_of_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def created():
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def blob_path(layout, digest):
    algo, hexpart = digest.split(":", 1)
    return os.path.join(layout, "blobs", algo, hexpart)


def init_layout(layout):
    os.makedirs(os.path.join(layout, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(layout, "oci-layout"), "wb") as f:
        f.write(canonical({"imageLayoutVersion": "1.0.0"}))


def put_bytes(layout, data):
    """Stores DATA as a blob; returns (digest, size)."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    with open(blob_path(layout, digest), "wb") as f:
        f.write(data)
    return digest, len(data)


def put_gzipped_layer(layout, tar_path):
    """Compresses TAR_PATH with `gzip -n` (no name, no timestamp) into a blob.

    Returns (layer digest, size, diff_id).
    """
    diff_id = sha256_of_file(tar_path)
    fd, tmp = tempfile.mkstemp(dir=os.path.join(layout, "blobs", "sha256"), prefix=".tmp-")
    with os.fdopen(fd, "wb") as out, open(tar_path, "rb") as src:
        subprocess.run(["gzip", "-n", "-c"], stdin=src, stdout=out, check=True)
    os.chmod(tmp, 0o644)  # mkstemp's 0600 would make the layout unreadable to other users
    digest = sha256_of_file(tmp)
    size = os.path.getsize(tmp)
    os.replace(tmp, blob_path(layout, digest))
    return digest, size, diff_id


def add_to_index_json(layout, descriptor, ref):
    """Adds DESCRIPTOR to the layout's index.json, replacing any entry with the same ref."""
    path = os.path.join(layout, "index.json")
    if os.path.exists(path):
        with open(path, "rb") as f:
            index = json.load(f)
    else:
        index = {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": []}
    entry = dict(descriptor)
    entry["annotations"] = {REF_NAME: ref}
    index["manifests"] = [
        m for m in index["manifests"] if m.get("annotations", {}).get(REF_NAME) != ref
    ] + [entry]
    with open(path, "wb") as f:
        f.write(canonical(index))


def platform(arch, variant):
    p = {"architecture": arch, "os": "linux"}
    if variant:
        p["variant"] = variant
    return p


def cmd_image(args):
    """Writes config and manifest for the layers; prints the manifest descriptor."""
    init_layout(args.layout)
    if len(args.created_by) not in (0, len(args.layer)):
        sys.exit("oci.py: give --created-by once per --layer, or not at all")
    layers, diff_ids = [], []
    for tar_path in args.layer:
        digest, size, diff_id = put_gzipped_layer(args.layout, tar_path)
        layers.append({"mediaType": MT_LAYER_GZIP, "digest": digest, "size": size})
        diff_ids.append(diff_id)
    when = created()
    config = {
        "created": when,
        "config": json.loads(args.config),
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [
            {"created": when, "created_by": by or "tools/images"}
            for by in (args.created_by or [""] * len(layers))
        ],
    }
    config.update(platform(args.arch, args.variant))
    config_digest, config_size = put_bytes(args.layout, canonical(config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": MT_MANIFEST,
        "config": {"mediaType": MT_CONFIG, "digest": config_digest, "size": config_size},
        "layers": layers,
    }
    digest, size = put_bytes(args.layout, canonical(manifest))
    descriptor = {
        "mediaType": MT_MANIFEST,
        "digest": digest,
        "size": size,
        "platform": platform(args.arch, args.variant),
    }
    if args.ref:
        add_to_index_json(args.layout, descriptor, args.ref)
    print(json.dumps(descriptor, sort_keys=True))


def cmd_index(args):
    """Writes an image index blob over the given manifest descriptors, tagged REF."""
    init_layout(args.layout)
    manifests = [json.loads(d) for d in args.descriptor]
    index = {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": manifests}
    digest, size = put_bytes(args.layout, canonical(index))
    add_to_index_json(args.layout, {"mediaType": MT_INDEX, "digest": digest, "size": size},
                      args.ref)


def read_json_blob(layout, digest):
    with open(blob_path(layout, digest), "rb") as f:
        return json.load(f)


def top_descriptor(layout, ref):
    with open(os.path.join(layout, "index.json"), "rb") as f:
        index = json.load(f)
    for m in index["manifests"]:
        if m.get("annotations", {}).get(REF_NAME) == ref:
            return m
    sys.exit(f"oci.py: no ref {ref!r} in {layout}/index.json")


def config_digest_of(layout, descriptor, arch="amd64"):
    """The config digest (docker's image ID) of a manifest, or of ARCH's entry in an index."""
    if descriptor["mediaType"] == MT_INDEX:
        index = read_json_blob(layout, descriptor["digest"])
        for m in index["manifests"]:
            if m.get("platform", {}).get("architecture") == arch:
                return config_digest_of(layout, m, arch)
        sys.exit(f"oci.py: no {arch} entry in index {descriptor['digest']}")
    return read_json_blob(layout, descriptor["digest"])["config"]["digest"]


def cmd_describe(args):
    """Prints 'DIGEST=<manifest or index digest> ID=<config digest>' for REF."""
    descriptor = top_descriptor(args.layout, args.ref)
    print(f"DIGEST={descriptor['digest']} ID={config_digest_of(args.layout, descriptor)}")


def cmd_docker_archive(args):
    """Lays out REF of an OCI layout as `docker save` writes it, in directory OUT.

    The config bytes are copied unchanged, so the docker image ID equals the OCI config digest;
    layers are stored uncompressed as <id>/layer.tar with the legacy VERSION and json files.
    """
    descriptor = top_descriptor(args.layout, args.ref)
    manifest = read_json_blob(args.layout, descriptor["digest"])
    config_digest = manifest["config"]["digest"]
    config = read_json_blob(args.layout, config_digest)
    os.makedirs(args.out, exist_ok=True)
    config_name = config_digest.split(":", 1)[1] + ".json"
    shutil.copyfile(blob_path(args.layout, config_digest), os.path.join(args.out, config_name))
    layer_paths, parent, chain = [], None, None
    for layer, diff_id in zip(manifest["layers"], config["rootfs"]["diff_ids"]):
        # Legacy layer ids: the OCI chain id, which is deterministic and unique per stack.
        chain = diff_id if chain is None else (
            "sha256:" + hashlib.sha256(f"{chain} {diff_id}".encode()).hexdigest())
        layer_id = chain.split(":", 1)[1]
        layer_dir = os.path.join(args.out, layer_id)
        os.makedirs(layer_dir, exist_ok=True)
        with gzip.open(blob_path(args.layout, layer["digest"]), "rb") as src, \
                open(os.path.join(layer_dir, "layer.tar"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        if sha256_of_file(os.path.join(layer_dir, "layer.tar")) != diff_id:
            sys.exit(f"oci.py: layer {layer['digest']} does not match diff_id {diff_id}")
        with open(os.path.join(layer_dir, "VERSION"), "wb") as f:
            f.write(b"1.0")
        legacy = {"id": layer_id, "created": config["created"], "os": "linux"}
        if parent:
            legacy["parent"] = parent
        with open(os.path.join(layer_dir, "json"), "wb") as f:
            f.write(canonical(legacy))
        layer_paths.append(f"{layer_id}/layer.tar")
        parent = layer_id
    repo, tag = args.repo_tag.rsplit(":", 1)
    with open(os.path.join(args.out, "manifest.json"), "wb") as f:
        f.write(canonical([{"Config": config_name, "RepoTags": [args.repo_tag],
                            "Layers": layer_paths}]))
    with open(os.path.join(args.out, "repositories"), "wb") as f:
        f.write(canonical({repo: {tag: parent}}))
    print(f"ID={config_digest}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("image", help="add an image manifest built from layer tars")
    p.add_argument("layout")
    p.add_argument("--layer", action="append", required=True, help="uncompressed layer tar")
    p.add_argument("--created-by", action="append", default=[], help="history, per layer")
    p.add_argument("--config", required=True, help="JSON of the image config's 'config'")
    p.add_argument("--arch", default="amd64")
    p.add_argument("--variant", default="")
    p.add_argument("--ref", default="", help="tag in index.json; empty: blobs only")
    p.set_defaults(func=cmd_image)

    p = sub.add_parser("index", help="add an image index over manifest descriptors")
    p.add_argument("layout")
    p.add_argument("--ref", required=True)
    p.add_argument("descriptor", nargs="+", help="descriptor JSON as printed by 'image'")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("describe", help="print DIGEST= and ID= for a tag")
    p.add_argument("layout")
    p.add_argument("--ref", default="latest")
    p.set_defaults(func=cmd_describe)

    p = sub.add_parser("docker-archive", help="write a `docker save` tree from a layout")
    p.add_argument("layout")
    p.add_argument("out")
    p.add_argument("--ref", default="latest")
    p.add_argument("--repo-tag", required=True)
    p.set_defaults(func=cmd_docker_archive)

    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
