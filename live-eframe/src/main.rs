fn main() -> eframe::Result {
    // Our application state:
    let mut name = "Arthur".to_owned();
    let mut age = 42;
    let mut my_boolean = true;

    let options = eframe::NativeOptions::default();
    eframe::run_ui_native("My egui App", options, move |ui, _frame| {
        // Wrap everything in a CentralPanel so we get some margins and a background color:
        egui::CentralPanel::default().show(ui, |ui| {
            ui.heading("My egui Application");
            ui.horizontal(|ui| {
                let name_label = ui.label("Your name: ");
                ui.text_edit_singleline(&mut name)
                    .labelled_by(name_label.id);
            });
            ui.add(egui::Slider::new(&mut age, 0..=120).text("age"));
            if ui.button("Increment").clicked() {
                age += 1;
            }
            ui.checkbox(&mut my_boolean, "Checkbox");
            ui.label(format!("Hello '{name}', age {age}"));
        });
    })
}
