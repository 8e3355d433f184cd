// Stand-in for json-slabs 0.4.0, which is not on the npm registry. The Firefox Profiler asks it whether a file
// is a JSLB container ("JSLB" magic) before parsing JSON; profkit writes gzipped JSON, never JSLB.
export function isJsonSlabsFile(bytes) {
  return (
    bytes instanceof Uint8Array &&
    bytes.length >= 4 &&
    bytes[0] === 0x4a &&
    bytes[1] === 0x53 &&
    bytes[2] === 0x4c &&
    bytes[3] === 0x42
  );
}
export function decode() {
  throw new Error('json-slabs stand-in: JSLB files cannot be decoded in this build');
}
export function encode() {
  throw new Error('json-slabs stand-in: JSLB files cannot be written in this build');
}
