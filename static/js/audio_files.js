// Audio from the browser, the pure part (no DOM, tested by tests/js/audio_files.test.js): which
// chosen files are sent, and how the upload's progress reads. audio_upload.js sends them.

/** Extensions of the clips a collection may hand in (mtcjudge.clips.decode.AUDIO_TYPES). */
export const AUDIO_EXTENSIONS = ["wav", "flac", "ogg", "oga", "opus", "mp3"];
/** Audio formats the server reports with the way out (convert them): sent, to be reported. */
export const REPORTED_EXTENSIONS = ["m4a", "aac", "mp4", "wma", "aif", "aiff"];
// what operating systems leave in folders: never the collection's
const SYSTEM_FILES = new Set([".DS_Store", "Thumbs.db", "desktop.ini"]);

/** "Song.MP3" -> "mp3"; "" when the name has no extension. */
export function extensionOf(name) {
  const dot = name.lastIndexOf(".");
  return dot < 0 ? "" : name.slice(dot + 1).toLowerCase();
}

/** 1234567 -> "1.2 MB", in decimal units as file managers show them. */
export function formatBytes(n) {
  const units = [
    ["GB", 1e9],
    ["MB", 1e6],
    ["kB", 1e3],
  ];
  for (const [unit, size] of units) {
    if (n >= size) {
      const value = n / size;
      return `${value >= 10 ? Math.round(value) : Math.round(value * 10) / 10} ${unit}`;
    }
  }
  return `${n} bytes`;
}

/**
 * The files of a chosen folder to send: audio files (and those of a format reported with its
 * way out) within `maxFileBytes`; the larger ones reported here without sending them
 * (`tooLarge`: {file_name, problem}); the others (covers, notes, system files) counted in
 * `skipped`. `files` are File objects (or anything with a name and a size).
 */
export function chooseFiles(files, maxFileBytes) {
  const send = [];
  const tooLarge = [];
  let skipped = 0;
  for (const file of files) {
    const ext = extensionOf(file.name);
    if (SYSTEM_FILES.has(file.name) || file.name.startsWith("._")) continue;
    if (!AUDIO_EXTENSIONS.includes(ext) && !REPORTED_EXTENSIONS.includes(ext)) {
      skipped += 1;
    } else if (file.size > maxFileBytes) {
      tooLarge.push({
        file_name: file.name,
        problem: `larger than the ${formatBytes(maxFileBytes)} allowed for one file`,
      });
    } else {
      send.push(file);
    }
  }
  return { send, tooLarge, skipped };
}

/** "12 of 240 files, 35 MB of 120 MB" (a zip: "35 MB of 120 MB"). */
export function progressText({ filesDone, filesTotal, bytesDone, bytesTotal }) {
  const bytes = `${formatBytes(bytesDone)} of ${formatBytes(bytesTotal)}`;
  if (filesTotal === undefined) return bytes;
  return `${filesDone} of ${filesTotal} ${filesTotal === 1 ? "file" : "files"}, ${bytes}`;
}
