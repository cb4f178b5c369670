// Audio from the browser (static/js/audio_files.js): which files are sent, the progress text.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { chooseFiles, extensionOf, formatBytes, progressText } from "../../static/js/audio_files.js";

describe("chooseFiles", () => {
  const file = (name, size = 10) => ({ name, size });

  test("sends audio files, reports the large ones, counts the others", () => {
    const chosen = chooseFiles(
      [file("a.wav"), file("B.MP3"), file("c.m4a"), file("cover.jpg"), file("big.flac", 5000), file(".DS_Store")],
      1000,
    );
    assert.deepEqual(
      chosen.send.map((f) => f.name),
      ["a.wav", "B.MP3", "c.m4a"],
    );
    assert.deepEqual(chosen.tooLarge, [
      { file_name: "big.flac", problem: "larger than the 1 kB allowed for one file" },
    ]);
    assert.equal(chosen.skipped, 1);
  });

  test("leaves out macOS resource forks and files without an extension", () => {
    const chosen = chooseFiles([file("._a.wav"), file("README")], 1000);
    assert.deepEqual(chosen.send, []);
    assert.equal(chosen.skipped, 1);
  });
});

describe("formats", () => {
  test("extensionOf", () => {
    assert.equal(extensionOf("café.Ogg"), "ogg");
    assert.equal(extensionOf("notes"), "");
  });

  test("formatBytes", () => {
    assert.equal(formatBytes(999), "999 bytes");
    assert.equal(formatBytes(1_234_567), "1.2 MB");
    assert.equal(formatBytes(35_000_000), "35 MB");
    assert.equal(formatBytes(2_500_000_000), "2.5 GB");
  });

  test("progressText", () => {
    const state = { filesDone: 12, filesTotal: 240, bytesDone: 35e6, bytesTotal: 120e6 };
    assert.equal(progressText(state), "12 of 240 files, 35 MB of 120 MB");
    assert.equal(progressText({ bytesDone: 1e6, bytesTotal: 2e6 }), "1 MB of 2 MB");
    assert.equal(
      progressText({ filesDone: 0, filesTotal: 1, bytesDone: 0, bytesTotal: 10 }),
      "0 of 1 file, 0 bytes of 10 bytes",
    );
  });
});
