//! Replica speed: one-node updates into 1k/10k/100k-node replicas
//! (validate + apply + change set), the validator's cost relative to a
//! plain consumer apply, the initial attach of 100k nodes, and sustained
//! apply throughput.
//!
//! `cargo bench -p newton-cache --bench replica`

mod shapes;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use newton_cache::accesskit_consumer::{NodeRef, Tree, TreeChangeHandler};
use newton_cache::{prepare_full_tree, AppReplica, Limits, SurfaceId};
use shapes::{document, relabel};

const S: SurfaceId = SurfaceId(1);
const SIZES: [u64; 3] = [1_000, 10_000, 100_000];

struct Ignore;
impl TreeChangeHandler for Ignore {
    fn node_added(&mut self, _: &NodeRef) {}
    fn node_updated(&mut self, _: &NodeRef, _: &NodeRef) {}
    fn focus_moved(&mut self, _: Option<&NodeRef>, _: Option<&NodeRef>) {}
    fn node_removed(&mut self, _: &NodeRef) {}
}

fn replica(items: u64) -> AppReplica {
    let mut app = AppReplica::new(Limits::default());
    app.create_surface(S, None).expect("surface");
    app.commit(S, vec![document(items)], 0)
        .expect("document applies");
    app
}

fn one_node_update(c: &mut Criterion) {
    let mut group = c.benchmark_group("one_node_update");
    for items in SIZES {
        let mut app = replica(items);
        let mut round = 0u64;
        group.bench_with_input(BenchmarkId::new("commit", items), &items, |b, items| {
            b.iter_batched(
                || {
                    round += 1;
                    relabel(round % items, round)
                },
                |update| app.commit(S, vec![update], 0).expect("valid"),
                BatchSize::SmallInput,
            )
        });
        let app = replica(items);
        group.bench_with_input(
            BenchmarkId::new("validate_only", items),
            &items,
            |b, items| {
                b.iter_batched(
                    || vec![relabel(7 % items, 1)],
                    |updates| app.check(S, &updates, 0).expect("valid"),
                    BatchSize::SmallInput,
                )
            },
        );
        let mut plain = Tree::new(document(items), false);
        let mut round = 0u64;
        group.bench_with_input(
            BenchmarkId::new("plain_consumer_apply", items),
            &items,
            |b, items| {
                b.iter_batched(
                    || {
                        round += 1;
                        relabel(round % items, round)
                    },
                    |update| plain.update_and_process_changes(update, &mut Ignore),
                    BatchSize::SmallInput,
                )
            },
        );
    }
    group.finish();
}

fn initial_attach(c: &mut Criterion) {
    let mut group = c.benchmark_group("initial_attach");
    group.sample_size(10);
    let items = 100_000;
    group.bench_function("commit_100k", |b| {
        b.iter_batched(
            || {
                let mut app = AppReplica::new(Limits::default());
                app.create_surface(S, None).expect("surface");
                (app, document(items))
            },
            |(mut app, update)| {
                app.commit(S, vec![update], 0).expect("valid");
                app
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("prepare_100k", |b| {
        b.iter_batched(
            || document(items),
            |update| prepare_full_tree(&Limits::default(), S, vec![update], 0).expect("valid"),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("plain_consumer_new_100k", |b| {
        b.iter_batched(
            || document(items),
            |update| Tree::new(update, false),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("throughput");
    const BATCH: u64 = 1_000;
    group.throughput(Throughput::Elements(BATCH));
    let mut app = replica(10_000);
    let mut round = 0u64;
    group.bench_function("commits_into_10k", |b| {
        b.iter_batched(
            || {
                round += 1;
                (0..BATCH)
                    .map(|i| relabel((i * 7) % 10_000, round))
                    .collect::<Vec<_>>()
            },
            |updates| {
                for update in updates {
                    app.commit(S, vec![update], 0).expect("valid");
                }
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_secs(1)).measurement_time(std::time::Duration::from_secs(3));
    targets = one_node_update, initial_attach, throughput
}
criterion_main!(benches);
