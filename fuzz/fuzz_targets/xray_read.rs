#![no_main]
//! Fuzz the XRay readers: header parse, buffer scan, full event decode (parallel and
//! sequential must agree), the sequential record walk and the verifier.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = profkit_xray::FileHeader::parse(data);
    if let Ok(trace) = profkit_xray::Trace::parse(data) {
        let decoded = trace.decode();
        assert_eq!(decoded, trace.decode_sequential());
        for ev in decoded.events() {
            let _ = trace.header.ticks_to_ns(ev.tsc);
            let _ = ev.args.to_vec();
        }
        let _ = trace.fdr_records().count();
        let _ = trace.basic_records().count();
        let _ = profkit_xray::verify(&trace);
    }
    let _ = profkit_xray::InstrMap::from_yaml(&String::from_utf8_lossy(data));
});
