//! Unit tests of the store layout: round trips, the batch sync, leases against prune, a blob of
//! the wrong size replaced, stale temp collection, corrupt blobs reported.

use super::*;
use crate::spec::descriptor::MANIFEST_V1;
use std::fs::File;
use std::io::Write;

#[test]
fn blobs_round_trip_and_tags_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s")).unwrap();
    let (d, n) = store
        .put_blob_from_reader(&b"hello"[..], &mut |_| {})
        .unwrap();
    assert_eq!(d, Digest::of(b"hello"));
    assert_eq!(n, 5);
    assert_eq!(store.read_blob(&d).unwrap(), b"hello");
    let m = br#"{"schemaVersion":2,"artifactType":"x/y"}"#;
    let desc = store.put_manifest(m, MANIFEST_V1).unwrap();
    assert_eq!(desc.artifact_type.as_deref(), Some("x/y"));
    assert_eq!(store.tag("meteo", &desc).unwrap(), "meteo:latest");
    store.tag("b/c:1", &desc).unwrap();
    assert_eq!(store.resolve("meteo").unwrap().unwrap().digest, desc.digest);
    assert_eq!(
        store.resolve("meteo:latest").unwrap().unwrap().digest,
        desc.digest
    );
    assert_eq!(
        store.resolve(desc.digest.as_str()).unwrap().unwrap().digest,
        desc.digest
    );
    assert_eq!(
        store
            .resolve(&desc.digest.as_str()[7..14])
            .unwrap()
            .unwrap()
            .digest,
        desc.digest
    );
    assert!(store.resolve("nope").unwrap().is_none());
    let names: Vec<String> = store.list().unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["b/c:1", "meteo:latest"]);
    assert!(store.untag("meteo").unwrap());
    assert!(!store.untag("meteo").unwrap());
    assert!(fs::read_dir(dir.path().join("s/.tmp"))
        .unwrap()
        .next()
        .is_none());
}

#[test]
fn a_batch_places_whole_blobs_and_syncs_them_before_any_index_change() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s")).unwrap();
    let batch = store.batched();
    let pending = || batch.batch.as_ref().unwrap().pending.lock().unwrap().len();
    let (d, n) = batch
        .put_blob_from_reader(&b"hello"[..], &mut |_| {})
        .unwrap();
    assert_eq!((d.clone(), n), (Digest::of(b"hello"), 5));
    // Under its digest name in full at once, before the sync; no index entry yet.
    assert_eq!(fs::read(store.blob_path(&d)).unwrap(), b"hello");
    let mut w = batch.blob_writer().unwrap();
    w.write_all(b"streamed").unwrap();
    w.commit().unwrap();
    let desc = batch
        .put_manifest(br#"{"schemaVersion":2}"#, MANIFEST_V1)
        .unwrap();
    assert_eq!(pending(), 3);
    assert!(store.list().unwrap().is_empty());
    // A reused blob is synced too: its writer may not have synced it.
    assert!(batch.has_blob(&d));
    assert_eq!(pending(), 4);
    batch.tag("meteo", &desc).unwrap();
    assert_eq!(pending(), 0);
    assert_eq!(store.resolve("meteo").unwrap().unwrap().digest, desc.digest);
    // A plain handle records nothing.
    assert!(store.batch.is_none());
    store.sync_batch().unwrap();
}

/// What `prune` does to a leased blob it looked at before the lease was taken: under the index
/// lock, moved aside, the leases read again, put back. A sync in that window waits for the
/// lock instead of failing (the race `store_hygiene`'s concurrent builds and prunes hit).
#[test]
fn a_sync_waits_for_a_prune_that_has_a_leased_blob_aside() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s")).unwrap();
    let batch = store.batched();
    let (d, _) = batch.put_blob_bytes(b"leased").unwrap();
    let path = store.blob_path(&d);
    let aside = store.tmp_dir().join("prune-test");
    let (moved, wait) = std::sync::mpsc::channel();
    let prune = {
        let (store, path, aside) = (store.clone(), path.clone(), aside.clone());
        std::thread::spawn(move || {
            let _lock = store.lock_index().unwrap();
            fs::rename(&path, &aside).unwrap();
            moved.send(()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(200));
            fs::rename(&aside, &path).unwrap();
        })
    };
    wait.recv().unwrap();
    batch.sync_batch().unwrap();
    prune.join().unwrap();
    assert_eq!(store.read_blob(&d).unwrap(), b"leased");
}

#[test]
fn a_blob_of_the_wrong_size_under_its_name_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s")).unwrap();
    let d = Digest::of(b"hello");
    // What a lost write-back leaves after a power cut: the name, not all the bytes.
    fs::write(store.blob_path(&d), b"he").unwrap();
    store.put_blob_bytes(b"hello").unwrap();
    assert_eq!(store.read_blob(&d).unwrap(), b"hello");
    fs::write(store.blob_path(&d), b"").unwrap();
    let batch = store.batched();
    batch
        .put_blob_from_reader(&b"hello"[..], &mut |_| {})
        .unwrap();
    batch.sync_batch().unwrap();
    assert_eq!(store.read_blob(&d).unwrap(), b"hello");
}

#[test]
fn stale_temp_files_are_collected_but_locked_and_fresh_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let tmp = dir.path().join(".tmp");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    let make = |name: &str, aged: bool| {
        let f = File::create(tmp.join(name)).unwrap();
        if aged {
            f.set_modified(old).unwrap();
        }
        f
    };
    drop(make("blob-stale", true));
    drop(make("fresh", false));
    let held = make("blob-held", true);
    held.lock().unwrap();
    // A live writer's file, made the way the store makes them.
    let writer = store.blob_writer().unwrap();
    fs::create_dir(tmp.join("a-dir")).unwrap();
    drop(Store::open(dir.path()).unwrap());
    let mut left: Vec<String> = fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("blob-") || n == "blob-held" || n == "blob-stale")
        .collect();
    left.sort();
    assert_eq!(left, ["a-dir", "blob-held", "fresh"]);
    assert_eq!(
        collect_stale_temps(&tmp, std::time::Duration::ZERO),
        1,
        "only `fresh` is unlocked"
    );
    assert!(tmp.join("blob-held").exists());
    let (d, _) = writer.commit().unwrap();
    assert!(
        store.has_blob(&d),
        "the collector left the live writer's file alone"
    );
    drop(held);
    assert_eq!(collect_stale_temps(&tmp, std::time::Duration::ZERO), 1);
}

#[test]
fn corrupt_blob_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (d, _) = store.put_blob_bytes(b"{}").unwrap();
    fs::write(store.blob_path(&d), b"[]").unwrap();
    assert!(matches!(
        store.read_blob(&d),
        Err(StoreError::Corrupt { .. })
    ));
}

/// A streamed blob longer than several write-back steps (so its flusher thread starts and is
/// nudged more than once) is stored whole under its digest; one abandoned past a step stops its
/// flusher and leaves no blob behind.
#[test]
fn a_streamed_blob_past_the_write_back_steps_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("s")).unwrap();
    let step = usize::try_from(WRITEBACK_STEP).unwrap();
    let bytes: Vec<u8> = (0..step * 5 / 2).map(|i| (i * 7 % 251) as u8).collect();
    let mut w = store.blob_writer().unwrap();
    for chunk in bytes.chunks(300_001) {
        w.write_all(chunk).unwrap();
    }
    assert!(w.flusher.started(), "past a step, the flusher runs");
    let (d, n) = w.commit().unwrap();
    assert_eq!((d.clone(), n), (Digest::of(&bytes), bytes.len() as u64));
    assert_eq!(fs::read(store.blob_path(&d)).unwrap(), bytes);

    let mut abandoned = store.blob_writer().unwrap();
    abandoned.write_all(&bytes[..=step]).unwrap();
    assert!(abandoned.flusher.started());
    drop(abandoned);
    let digest = Digest::of(&bytes[..=step]);
    assert!(!store.has_blob(&digest));
}
