//! `Config` options: `service` definitions reach a user
//! `ServiceGenerator` (its output is appended to the package's file), and
//! type/field attributes land on the generated items. (`extern_path` and
//! `include_file` are exercised end to end by granola-tests' build.)

use std::cell::RefCell;
use std::rc::Rc;

use granola_build::{Config, Service, ServiceGenerator};

struct Recorder(Rc<RefCell<Vec<Service>>>);

impl ServiceGenerator for Recorder {
    fn generate(&mut self, service: Service, buf: &mut String) {
        buf.push_str(&format!("// service {}\n", service.full_name));
        for m in &service.methods {
            buf.push_str(&format!(
                "// rpc {}({}) -> {}\n",
                m.name, m.input_type, m.output_type
            ));
        }
        self.0.borrow_mut().push(service);
    }

    fn finalize(&mut self, buf: &mut String) {
        buf.push_str("// end of services\n");
    }
}

#[test]
fn services_reach_the_generator() {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let files = Config::new()
        .service_generator(Box::new(Recorder(seen.clone())))
        .generate(&["tests/golden/lang.proto"], &["tests/golden"])
        .unwrap();
    let seen = seen.borrow();
    assert_eq!(seen.len(), 1);
    let s = &seen[0];
    assert_eq!((s.name.as_str(), s.package.as_str()), ("Shapes", "lang"));
    assert_eq!(s.full_name, "lang.Shapes");
    assert_eq!(s.methods.len(), 2);
    let draw = &s.methods[0];
    assert_eq!(draw.name, "draw");
    assert_eq!(draw.proto_name, "Draw");
    assert_eq!(draw.input_type, "Shape");
    assert_eq!(draw.output_type, "Old");
    assert_eq!(draw.input_proto_type, "lang.Shape");
    assert!(draw.comments.contains("Draws one shape."));
    assert!(!draw.client_streaming && !draw.server_streaming);
    let watch = &s.methods[1];
    assert!(watch.client_streaming && watch.server_streaming);
    let out = &files[0].content;
    assert!(out.contains("// rpc draw(Shape) -> Old\n"), "{out}");
    assert!(out.ends_with("// end of services\n"));
}

#[test]
fn without_a_generator_services_generate_nothing() {
    let files = Config::new()
        .generate(&["tests/golden/lang.proto"], &["tests/golden"])
        .unwrap();
    assert!(!files[0].content.contains("service"));
}

#[test]
fn type_and_field_attributes_are_emitted() {
    let files = Config::new()
        .type_attribute(".lang.Shape", "#[must_use]")
        .type_attribute(".lang.Shape.body", "#[non_exhaustive]")
        .field_attribute(".lang.Maps.s_s", "#[doc(alias = \"strings\")]")
        .generate(&["tests/golden/lang.proto"], &["tests/golden"])
        .unwrap();
    let out = &files[0].content;
    assert!(
        out.contains("#[must_use]\n#[derive(Clone, Debug, Default)]\npub struct Shape<'a>"),
        "{out}"
    );
    assert!(out.contains("#[non_exhaustive]\n    #[derive(Clone, Debug)]\n    pub enum Body<'a>"));
    assert!(out.contains("#[doc(alias = \"strings\")]\n    pub s_s:"));
    // A bad attribute is an error, not broken output.
    let e = Config::new()
        .type_attribute(".", "derive(Clone")
        .generate(&["tests/golden/lang.proto"], &["tests/golden"])
        .unwrap_err();
    assert!(e.to_string().contains("does not parse"), "{e}");
}
